import { CronPlannerService } from 'nestjs-pg-jobs';
import {
  expandSlots,
  latestSlotAtOrBefore,
} from '../../libs/jobs/src/cron-schedule/slot-expansion.js';
import { OffsetTable, oracleSlots } from '../support/cron-oracle.js';
import { startJobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

/**
 * The library's slots against an oracle written from the daylight-saving rules of docs/cron.md
 * (`support/cron-oracle.ts`), around every offset change of 2026 and 2027 in zones with none, a
 * one-hour, a 30-minute, a midnight and a two-hour change. `CRON_DIFFERENTIAL=full` runs a bigger
 * matrix: more expressions, more start instants, more slots each.
 */
const FULL = process.env.CRON_DIFFERENTIAL === 'full';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const ZONES = [
  'UTC',
  'Asia/Kolkata',
  'America/New_York',
  'Europe/Berlin',
  'Australia/Lord_Howe',
  'America/Havana',
  'Antarctica/Troll',
];
const EXPRESSIONS = [
  // fixed times in the gaps and repeats of every zone above
  '30 2 * * *',
  '0 2 * * *',
  '30 1 * * *',
  '15 2 * * *',
  '0 0 * * *',
  '30 0 * * *',
  '0,30 1,2 * * *',
  '0 1-3 * * *',
  // every hour, by elapsed time
  '0 * * * *',
  '30 * * * *',
  '*/15 * * * *',
  '0 */1 * * *',
  // hour steps: fixed hours
  '0 */2 * * *',
  '30 1/2 * * *',
  // seconds
  '*/20 * * * * *',
  '30 30 2 * * *',
  // aliases, L, #, day-of-month with weekday
  '@daily',
  '@hourly',
  '30 2 L * *',
  '0 2 * * 0L',
  '30 1 * * 0#1',
  '0 2 * * 0#2',
  '30 2 1,15 * 0',
  '0 1 * MAR,APR,OCT,NOV SUN',
  ...(FULL
    ? [
        '45 1 * * *',
        '59 23 * * *',
        '0 3 * * *',
        '*/7 * * * *',
        '0 0-23 * * *',
        '15 */4 * * *',
        '0 0 */2 * * *',
        '10 */30 * * * *',
        '@weekly',
        '@monthly',
        '@yearly',
        '30 1 * * 0L',
        '0 0 8 3 0',
        '30 1 25-31 * 0',
        '30 1 * * SAT,SUN',
        '0 2 * * 5-7',
      ]
    : []),
];
/** Start instants, relative to an offset change. */
const STARTS = FULL
  ? Array.from({ length: 37 }, (_, i) => -6 * HOUR + i * (20 * MINUTE + 7_000))
  : [-3 * HOUR, -40 * MINUTE + 7_000, 25 * MINUTE];
const SLOTS = FULL ? 30 : 8;
const SPAN = { from: Date.UTC(2025, 11, 1), to: Date.UTC(2028, 1, 1) };
const WINDOW = { before: 2 * DAY, after: FULL ? 6 * DAY : 3 * DAY };

const tables = new Map(ZONES.map((zone) => [zone, new OffsetTable(zone, SPAN.from, SPAN.to)]));
const inYears = (t: number) => t >= Date.UTC(2026, 0, 1) && t < Date.UTC(2028, 0, 1);
/** A zone's offset changes of 2026 and 2027; for a zone without, New York's. */
const changesOf = (zone: string): number[] => {
  const own = (tables.get(zone) as OffsetTable).transitions.filter(inYears);
  return own.length > 0 ? own : changesOf('America/New_York');
};
const iso = (times: number[]) => times.map((t) => new Date(t).toISOString());

describe.each(ZONES)('slots in %s agree with the oracle', (zone) => {
  const table = tables.get(zone) as OffsetTable;
  const changes = changesOf(zone);

  it('has offset changes to test around (or borrows them)', () => {
    expect(changes.length).toBeGreaterThanOrEqual(4);
  });

  it.each(EXPRESSIONS)('%s: expandSlots and latestSlotAtOrBefore, around every change', (cron) => {
    const source = { cron, timezone: zone };
    for (const change of changes) {
      // The oracle's slots are complete in [from, until); each start's answer is checked in it.
      const from = change - WINDOW.before;
      const until = change + WINDOW.after;
      const expected = oracleSlots(cron, table, from, until);
      for (const offset of STARTS) {
        const start = change + offset;
        const label = `${cron} in ${zone} from ${new Date(start).toISOString()}`;
        const next = expected.filter((slot) => slot > start).slice(0, SLOTS);
        const got = expandSlots(source, new Date(start), new Date(until - 1), SLOTS);
        expect({ label, slots: iso(got.map((d) => d.getTime())) }).toEqual({
          label,
          slots: iso(next),
        });
        const before = expected.filter((slot) => slot <= start);
        const latest = latestSlotAtOrBefore(source, new Date(start))?.getTime();
        if (before.length > 0) {
          expect({ label, latest: iso([latest ?? NaN]) }).toEqual({
            label,
            latest: iso([before[before.length - 1]]),
          });
        } else {
          // None in the oracle's window: the library's must lie before it.
          expect({ label, before: (latest ?? -Infinity) < from }).toEqual({ label, before: true });
        }
      }
    }
  });
});

describe("nextRuns agrees with the oracle from the database's now", () => {
  const db = useTestDatabase('jobs_cron_dst_differential');
  /** Expression, zone, runs asked for, and days that hold them: past both changes of 2027. */
  const CASES = [
    ['30 2 * * 0', 'Europe/Berlin', 60, 430],
    ['0 */2 * * 0', 'Antarctica/Troll', 1_000, 600],
    ['0,30 1,2 * * 0', 'Australia/Lord_Howe', 300, 540],
  ] as const;
  let planner: CronPlannerService;

  beforeAll(async () => {
    const app = await startJobsApp(db.url, {
      options: { allowUnknownTasks: true, runJobs: false, scheduledCheck: 3600 },
    });
    planner = app.module.get(CronPlannerService);
  });

  it.each(CASES)('%s in %s, %i runs', async (cron, timezone, count, days) => {
    const name = `next_${timezone.replace(/\W/g, '_')}`;
    await planner.setSchedule({ name, task: 'noop', cron, timezone });
    const dbNow = async () => (await db.query<{ now: Date }>('SELECT now()'))[0].now.getTime();
    const before = await dbNow();
    const runs = (await planner.nextRuns(name, count)).map((d) => d.getTime());
    const after = await dbNow();
    const table = new OffsetTable(timezone, before - DAY, before + (days + 1) * DAY);
    const slots = oracleSlots(cron, table, before, before + days * DAY);
    // The planner read the database's clock at some instant between `before` and `after`.
    const from = (now: number) => iso(slots.filter((slot) => slot > now).slice(0, count));
    expect(runs).toHaveLength(count);
    expect([from(before), from(after)]).toContainEqual(iso(runs));
  });
});
