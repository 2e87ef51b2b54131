import { parseWallClockCron } from './cron-parser.js';
import { instantsOfWallTime, offsetsAround } from './wall-clock.js';

/** What slot expansion needs of a schedule. */
export interface SlotSource {
  readonly cron: string;
  readonly timezone: string;
}

/**
 * How a one-off schedule (a `Date` given as its `cron`) is stored: `Date.prototype.toISOString()`.
 * No cron expression has this shape (one field, not an alias), so the two cannot be confused.
 */
const ONE_OFF_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** Cron fields are whole seconds: a wall-clock iteration started this much early misses none. */
const SECOND_MS = 1000;

/** The instant of a one-off schedule's stored `cron`, or `null` for a cron expression. */
export function oneOffInstant(cron: string): Date | null {
  return ONE_OFF_INSTANT.test(cron) ? new Date(cron) : null;
}

/**
 * The first `limit` slots of `source` in `(after, until]`, in order. The slots are a set of
 * instants fixed by the expression and the zone (see `slotTimes`): the answer never depends on
 * when it is asked.
 */
export function expandSlots(source: SlotSource, after: Date, until: Date, limit: number): Date[] {
  const slots: Date[] = [];
  if (limit <= 0 || until.getTime() <= after.getTime()) return slots;
  const once = oneOffInstant(source.cron);
  if (once) {
    return once.getTime() > after.getTime() && once.getTime() <= until.getTime() ? [once] : [];
  }
  for (const slot of slotTimes(source, after.getTime(), 'forward')) {
    if (slot > until.getTime() || slots.length === limit) break;
    slots.push(new Date(slot));
  }
  return slots;
}

/** The latest slot of `source` at or before `at`: of the same set `expandSlots` lists. */
export function latestSlotAtOrBefore(source: SlotSource, at: Date): Date | null {
  const once = oneOffInstant(source.cron);
  if (once) return once.getTime() <= at.getTime() ? once : null;
  for (const slot of slotTimes(source, at.getTime(), 'backward')) return new Date(slot);
  return null;
}

/**
 * The slots of `source` after `from` in order (`forward`), or at or before it latest first
 * (`backward`), without end. cron-parser lists the expression's wall-clock times, with no zone
 * (see `parseWallClockCron`); `instantsOfWallTime` maps each to the instants it runs at.
 * Near a change of offset that mapping is not monotonic (a time shifted out of a gap lands after
 * real times read later; a repeated hour's second pass lands after the next hour's first), so
 * instants wait in `pending` until no wall-clock time still to come can map before them: every
 * later one maps to its wall-clock time minus one of the offsets near it.
 */
function* slotTimes(
  source: SlotSource,
  from: number,
  direction: 'forward' | 'backward',
): Generator<number, never> {
  const forward = direction === 'forward';
  const sign = forward ? 1 : -1;
  const near = offsetsAround(source.timezone, from);
  // An instant after `from` is read on a clock past `from` + the smaller offset; one at or before
  // it, on a clock at or before `from` + the larger.
  const start = forward
    ? from + Math.min(...near) - SECOND_MS
    : from + Math.max(...near) + SECOND_MS;
  const wallClock = parseWallClockCron(source.cron, new Date(start));
  const everyHour = wallClock.fields.hour.values.length === 24;
  const wanted = forward ? (t: number) => t > from : (t: number) => t <= from;
  const pending: number[] = []; // by `sign * t`, ascending; the next to yield first
  for (;;) {
    const wall = (forward ? wallClock.next() : wallClock.prev()).getTime();
    const offsets = offsetsAround(source.timezone, wall);
    for (const instant of instantsOfWallTime(source.timezone, wall, offsets, everyHour)) {
      if (wanted(instant)) insertOnce(pending, instant, sign);
    }
    const settled = forward ? wall - Math.max(...offsets) : wall - Math.min(...offsets);
    while (pending.length > 0 && sign * pending[0] <= sign * settled) {
      yield pending.shift() as number;
    }
  }
}

function insertOnce(sorted: number[], value: number, sign: number): void {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (sign * sorted[mid] < sign * value) low = mid + 1;
    else high = mid;
  }
  if (sorted[low] !== value) sorted.splice(low, 0, value);
}
