import { isFixedOffsetZone } from './time-zones.js';

/**
 * A wall-clock time is held as the epoch milliseconds it would be in UTC (`Date.UTC` of its
 * fields); an offset is in milliseconds east of UTC. The instant of a wall-clock time `wall` read
 * with offset `o` is `wall - o`.
 */
const DAY_MS = 86_400_000;
const FIXED_OFFSET = /^UTC([+-])(\d{2}):(\d{2})$/;
const INTL_OFFSET = /^GMT(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/;

const offsetFormats = new Map<string, Intl.DateTimeFormat>();

/** The offset of `timezone` at `instant`. */
export function utcOffsetAt(timezone: string, instant: number): number {
  if (isFixedOffsetZone(timezone)) return parseOffset(FIXED_OFFSET.exec(timezone));
  let format = offsetFormats.get(timezone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: timezone, timeZoneName: 'longOffset' });
    offsetFormats.set(timezone, format);
  }
  const name = format.formatToParts(instant).find((part) => part.type === 'timeZoneName')?.value;
  return parseOffset(INTL_OFFSET.exec(name ?? ''));
}

function parseOffset(match: RegExpExecArray | null): number {
  if (!match) throw new Error('Unreadable UTC offset');
  if (match[1] === undefined) return 0;
  const [hours, minutes, seconds] = [match[2], match[3], match[4] ?? '0'].map(Number);
  return (match[1] === '-' ? -1 : 1) * (hours * 3600 + minutes * 60 + seconds) * 1000;
}

/**
 * The offsets in force a day before and a day after `time` (an instant, or a wall-clock time:
 * they differ by less than a day). Equal unless the offset changes near `time`; every reading of
 * the wall clock near `time` uses one of the two. This assumes, as the time zone database bears
 * out, that a zone's offset never changes twice within two days.
 */
export function offsetsAround(timezone: string, time: number): readonly [number, number] {
  return [utcOffsetAt(timezone, time - DAY_MS), utcOffsetAt(timezone, time + DAY_MS)];
}

/**
 * The instants a schedule runs wall-clock time `wall` of `timezone` at, by the rules of docs/cron.md:
 * - a time that exists once runs then;
 * - a time in a gap (spring forward) runs once, shifted forward by the gap: read with the offset
 *   before the change;
 * - a time that happens twice (fall back) runs at its first occurrence (the offset before the
 *   change), and at the second too only when `everyHour` (the expression's hour field names every
 *   hour: it runs by elapsed time, so the repeated hour is an hour like any other).
 * `offsets` is `offsetsAround(timezone, wall)`. Several wall-clock times may share an instant (a
 * shifted time and a real one); callers drop the repeats.
 */
export function instantsOfWallTime(
  timezone: string,
  wall: number,
  offsets: readonly [number, number],
  everyHour: boolean,
): number[] {
  const [before, after] = offsets;
  const first = wall - before;
  if (before === after) return [first];
  const second = wall - after;
  const firstExists = utcOffsetAt(timezone, first) === before;
  const secondExists = utcOffsetAt(timezone, second) === after;
  if (firstExists && secondExists) return everyHour ? [first, second] : [first];
  if (secondExists) return [second];
  // The time exists before the change only, or not at all (a gap): either way the reading with
  // the earlier offset is the one that runs.
  return [first];
}
