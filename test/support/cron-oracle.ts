/**
 * An oracle for cron slots, written from the daylight-saving rules of docs/cron.md and from nothing of the
 * library: its own reading of the cron fields, its own table of offsets, and brute force over
 * every minute of the timeline. What it covers of cron syntax is what the differential matrix
 * uses: numbers, names, `*`, `?`, ranges, steps, lists, day-of-month `L`, weekday `nL` and `n#k`,
 * the `@` aliases; day-of-month and weekday both restricted match either (Vixie cron).
 *
 * The rules, as docs/cron.md states them:
 * - a wall-clock time that does not exist (spring forward) runs once, shifted forward by the gap;
 * - a wall-clock time that happens twice (fall back) runs at its first occurrence; also at its
 *   second when the hour field names every hour (the schedule runs by elapsed time);
 * - two wall-clock times that land on one instant run once.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** No zone changes its offset twice within six hours. */
const SCAN_STEP = 6 * HOUR;

const ALIASES: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

/** A wall-clock time held as the epoch milliseconds of its fields read in UTC. */
type Wall = number;

interface Pattern {
  seconds: readonly number[];
  minutes: Set<number>;
  hours: Set<number>;
  months: Set<number>;
  days: Set<number>;
  lastDay: boolean;
  weekdays: Set<number>;
  lastWeekdays: Set<number>;
  nthWeekdays: { weekday: number; nth: number }[];
  dayRestricted: boolean;
  weekdayRestricted: boolean;
}

function values(field: string, min: number, max: number, names: string[] = []): Set<number> {
  const out = new Set<number>();
  for (const item of field.split(',')) {
    const [range, stepText] = item.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    const read = (text: string) => {
      const named = names.indexOf(text.toUpperCase());
      return named >= 0 ? named + (min === 1 ? 1 : 0) : Number(text);
    };
    let [low, high] = [min, max];
    if (range !== '*' && range !== '?') {
      const [a, b] = range.split('-');
      low = read(a);
      high = b === undefined ? (stepText === undefined ? low : max) : read(b);
    }
    if (!Number.isInteger(low) || !Number.isInteger(high) || !(step > 0)) {
      throw new Error(`oracle: cannot read "${field}"`);
    }
    for (let v = low; v <= high; v += step) out.add(v);
  }
  return out;
}

function parse(expression: string): Pattern {
  const fields = (ALIASES[expression] ?? expression).trim().split(/\s+/);
  if (fields.length === 5) fields.unshift('0');
  const [second, minute, hour, day, month, weekday] = fields;
  const pattern: Pattern = {
    seconds: [...values(second, 0, 59)].sort((a, b) => a - b),
    minutes: values(minute, 0, 59),
    hours: values(hour, 0, 23),
    months: values(month, 1, 12, MONTHS),
    days: new Set(),
    lastDay: false,
    weekdays: new Set(),
    lastWeekdays: new Set(),
    nthWeekdays: [],
    dayRestricted: day !== '*' && day !== '?',
    weekdayRestricted: weekday !== '*' && weekday !== '?',
  };
  for (const item of day.split(',')) {
    if (item === 'L') pattern.lastDay = true;
    else for (const v of values(item, 1, 31)) pattern.days.add(v);
  }
  for (const item of weekday.split(',')) {
    const last = /^(\w+)L$/.exec(item);
    const nth = /^(\w+)#(\d)$/.exec(item);
    const weekdayOf = (text: string) => [...values(text, 0, 7, WEEKDAYS)][0] % 7;
    if (last) pattern.lastWeekdays.add(weekdayOf(last[1]));
    else if (nth) pattern.nthWeekdays.push({ weekday: weekdayOf(nth[1]), nth: Number(nth[2]) });
    else for (const v of values(item, 0, 7, WEEKDAYS)) pattern.weekdays.add(v % 7);
  }
  return pattern;
}

function dayMatches(p: Pattern, date: Date): boolean {
  const dom = date.getUTCDate();
  const dow = date.getUTCDay();
  const daysInMonth = new Date(
    Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 0),
  ).getUTCDate();
  const byDay = p.days.has(dom) || (p.lastDay && dom === daysInMonth);
  const byWeekday =
    p.weekdays.has(dow) ||
    (p.lastWeekdays.has(dow) && dom + 7 > daysInMonth) ||
    p.nthWeekdays.some(({ weekday, nth }) => weekday === dow && Math.ceil(dom / 7) === nth);
  if (p.dayRestricted && p.weekdayRestricted) return byDay || byWeekday;
  return (!p.dayRestricted || byDay) && (!p.weekdayRestricted || byWeekday);
}

function minuteMatches(p: Pattern, wall: Wall): boolean {
  const ofDay = (((wall % DAY) + DAY) % DAY) / MINUTE;
  if (!p.minutes.has(ofDay % 60) || !p.hours.has(Math.floor(ofDay / 60))) return false;
  const date = new Date(wall);
  return p.months.has(date.getUTCMonth() + 1) && dayMatches(p, date);
}

/** A zone's offsets over a span, read once from `Intl` and looked up by binary search after. */
export class OffsetTable {
  private readonly changes: number[] = [];
  private readonly offsets: number[] = [];

  constructor(
    readonly zone: string,
    from: number,
    to: number,
  ) {
    const format = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    const read = (t: number) => {
      const part = Object.fromEntries(
        format.formatToParts(t).map(({ type, value }) => [type, Number(value)]),
      );
      const wall = Date.UTC(
        part.year,
        part.month - 1,
        part.day,
        part.hour,
        part.minute,
        part.second,
      );
      return wall - Math.floor(t / 1000) * 1000;
    };
    // Offsets change on whole minutes: scanning from a whole hour keeps every probe on one.
    const start = Math.floor(from / HOUR) * HOUR;
    let previous = read(start);
    this.changes.push(-Infinity);
    this.offsets.push(previous);
    for (let t = start + SCAN_STEP; t <= to + SCAN_STEP; t += SCAN_STEP) {
      const offset = read(t);
      if (offset === previous) continue;
      let [low, high] = [t - SCAN_STEP, t]; // the change lies in (low, high], to the minute
      while (high - low > MINUTE) {
        const mid = low + Math.floor((high - low) / 2 / MINUTE) * MINUTE;
        if (read(mid) === previous) low = mid;
        else high = mid;
      }
      this.changes.push(high);
      this.offsets.push(offset);
      previous = offset;
    }
  }

  /** The instants (minute-aligned) at which the offset changes. */
  get transitions(): number[] {
    return this.changes.slice(1);
  }

  offsetAt(t: number): number {
    let [low, high] = [0, this.changes.length - 1];
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (this.changes[mid] <= t) low = mid;
      else high = mid - 1;
    }
    return this.offsets[low];
  }
}

/**
 * Every slot of `expression` in `[from, to)`, by the rules above, walking the timeline minute by
 * minute from `from - 4 h` (so that a repeated hour started before `from` is known as repeated).
 */
export function oracleSlots(
  expression: string,
  table: OffsetTable,
  from: number,
  to: number,
): number[] {
  const p = parse(expression);
  const everyHour = p.hours.size === 24;
  const minutes: number[] = [];
  let latestWall = -Infinity;
  let previousWall: Wall | undefined;
  for (let t = Math.floor((from - 4 * HOUR) / MINUTE) * MINUTE; t < to; t += MINUTE) {
    const wall = t + table.offsetAt(t);
    if (previousWall !== undefined && wall - previousWall > MINUTE) {
      // Walls previousWall+1min .. wall-1min never show: each runs shifted forward by the gap.
      for (let skipped = previousWall + MINUTE; skipped < wall; skipped += MINUTE) {
        if (minuteMatches(p, skipped)) minutes.push(t + (skipped - previousWall - MINUTE));
      }
    }
    const repeated = wall <= latestWall;
    if (minuteMatches(p, wall) && (!repeated || everyHour)) minutes.push(t);
    latestWall = Math.max(latestWall, wall);
    previousWall = wall;
  }
  const slots = new Set<number>();
  for (const minute of minutes) {
    for (const second of p.seconds) {
      const slot = minute + second * 1000;
      if (slot >= from && slot < to) slots.add(slot);
    }
  }
  return [...slots].sort((a, b) => a - b);
}
