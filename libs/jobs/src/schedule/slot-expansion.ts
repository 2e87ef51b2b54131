import { cronExpressionParser } from './cron-parser.js';
import { isFixedOffsetZone } from './time-zones.js';

/** What slot expansion needs of a schedule. */
export interface SlotSource {
  readonly cron: string;
  readonly timezone: string;
}

/**
 * Near a daylight-saving change cron-parser's answer depends on where iteration starts: started
 * inside a repeated hour it yields the second 02:30 that continuous iteration skipped, and started
 * just after a spring-forward it drops the shifted 03:30 that continuous iteration yields. Two
 * planning rounds a few minutes apart would then disagree, and both slots would run. So within
 * `TRANSITION_WINDOW_MS` of an offset change, iteration starts `ANCHOR_LOOKBACK_MS` earlier (before
 * any repeated or skipped time, the largest shift in use being two hours) and the slots up to
 * `after` are dropped.
 */
const TRANSITION_WINDOW_MS = 3 * 3600_000;
const ANCHOR_LOOKBACK_MS = 6 * 3600_000;
/**
 * cron-parser costs ~80 µs a slot in a time zone: an every-second schedule near a transition would
 * spend seconds skipping to `after`. Past this many skipped slots (only expressions firing every
 * ten seconds or more often get there) iteration restarts at `after`, accepting for them the
 * start-dependence this avoids for everything else.
 */
const MAX_SKIPPED_SLOTS = 2_000;

/**
 * How a one-off schedule (a `Date` given as its `cron`) is stored: `Date.prototype.toISOString()`.
 * No cron expression has this shape (one field, not an alias), so the two cannot be confused.
 */
const ONE_OFF_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The instant of a one-off schedule's stored `cron`, or `null` for a cron expression. */
export function oneOffInstant(cron: string): Date | null {
  return ONE_OFF_INSTANT.test(cron) ? new Date(cron) : null;
}

/**
 * The first `limit` slots of `source` in `(after, until]`, in order. The answer depends only on the
 * expression, the zone and the interval, not on when it is asked (see `ANCHOR_LOOKBACK_MS`).
 */
export function expandSlots(source: SlotSource, after: Date, until: Date, limit: number): Date[] {
  const slots: Date[] = [];
  if (limit <= 0 || until.getTime() <= after.getTime()) return slots;
  const once = oneOffInstant(source.cron);
  if (once) {
    return once.getTime() > after.getTime() && once.getTime() <= until.getTime() ? [once] : [];
  }
  const start = nearOffsetChange(source.timezone, after)
    ? new Date(after.getTime() - ANCHOR_LOOKBACK_MS)
    : after;
  const iterator = cronExpressionParser().parse(source.cron, {
    currentDate: start,
    endDate: until,
    tz: source.timezone,
  });
  let skipped = 0;
  while (slots.length < limit && iterator.hasNext()) {
    const slot = iterator.next().toDate();
    if (slot.getTime() > after.getTime()) {
      slots.push(slot);
    } else if (++skipped === MAX_SKIPPED_SLOTS) {
      iterator.reset(after);
    }
  }
  return slots;
}

/** The latest slot of `source` at or before `at`, or `null` if there is none within cron-parser's reach. */
export function latestSlotAtOrBefore(source: SlotSource, at: Date): Date | null {
  const once = oneOffInstant(source.cron);
  if (once) return once.getTime() <= at.getTime() ? once : null;
  const iterator = cronExpressionParser().parse(source.cron, {
    currentDate: new Date(at.getTime() + 1),
    tz: source.timezone,
  });
  try {
    return iterator.prev().toDate();
  } catch {
    return null;
  }
}

const offsetFormats = new Map<string, Intl.DateTimeFormat>();

function utcOffset(timezone: string, at: number): string {
  let format = offsetFormats.get(timezone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: timezone, timeZoneName: 'longOffset' });
    offsetFormats.set(timezone, format);
  }
  return format.formatToParts(at).find((part) => part.type === 'timeZoneName')?.value ?? '';
}

function nearOffsetChange(timezone: string, at: Date): boolean {
  if (isFixedOffsetZone(timezone)) return false;
  const t = at.getTime();
  return (
    utcOffset(timezone, t - TRANSITION_WINDOW_MS) !== utcOffset(timezone, t + TRANSITION_WINDOW_MS)
  );
}
