import { AsyncLocalStorage } from 'node:async_hooks';
import { jest } from '@jest/globals';
import { CronPlannerService, JobsAdminModule, JobsAdminService } from 'nestjs-pg-jobs';
import type { CronSlotInfo, ListedScheduleInfo } from 'nestjs-pg-jobs';
import { adminSql } from '../../libs/jobs/src/admin/admin.sql.js';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { json, startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import { executedPlanNodes } from '../support/query-plan.js';
import { recording } from '../support/recorder.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_admin_schedule_runs');
const GRACE = 60;

let server: HttpJobsApp;
let planner: CronPlannerService;
const api = (path: string) => fetch(`${server.url}/ops/api/${path}`);

/**
 * Moves the earliest planned slots of `schedule`, with their jobs, to these many seconds ago (one
 * slot per value), as a downtime or a backlog leaves them: the claim then judges each by its
 * grace, as it would any late slot.
 */
async function moveSlotsBack(schedule: string, secondsAgo: number[]): Promise<void> {
  await db.query(
    `WITH picked AS (
       SELECT p.slot, t.ago
       FROM (SELECT slot, row_number() OVER (ORDER BY slot) AS n
             FROM jobs."jobScheduleSlot" WHERE schedule = $1) AS p
       JOIN unnest($2::int[]) WITH ORDINALITY AS t(ago, n) ON t.n = p.n
     ), slots AS (
       UPDATE jobs."jobScheduleSlot" p SET slot = now() - make_interval(secs => t.ago)
       FROM picked t WHERE p.schedule = $1 AND p.slot = t.slot
       RETURNING p."jobId", p.slot
     )
     UPDATE jobs.jobs j SET "waitUntil" = s.slot, "startBy" = s.slot + make_interval(secs => $3)
     FROM slots s WHERE j.id = s."jobId"`,
    [schedule, secondsAgo, GRACE],
  );
}

/** Schedule `name`'s slots at or before now, latest first, with their jobs' history states. */
const pastSlots = (name: string) =>
  db.query<{ slot: Date; jobId: string; state: string | null; queued: boolean }>(
    `SELECT p.slot, p."jobId", h.state, EXISTS (SELECT 1 FROM jobs.jobs j WHERE j.id = p."jobId") AS queued
     FROM jobs."jobScheduleSlot" p LEFT JOIN jobs."jobHistory" h ON h.id = p."jobId"
     WHERE p.schedule = $1 AND p.slot <= now() ORDER BY p.slot DESC`,
    [name],
  );

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ path: 'ops', guard: { canActivate: () => true } })],
    ...recording('admin'),
    // Planned once, at each setSchedule: the slots moved into the past stay as they are put. A
    // failed attempt waits an hour for its retry.
    options: {
      pollingCheck: 0.2,
      scheduledCheck: 3600,
      maxPlannedSlots: 3,
      maxRetries: 1,
      retryBackoff: 3600,
    },
  });
  planner = server.app.get(CronPlannerService);
}, 60_000);
afterAll(() => server?.close());

describe('GET api/schedules', () => {
  it("gives each schedule its next 3 runs and its last 5 slots with their jobs' states: a missed slot skipped, a job waiting for its retry pending, a deleted job null", async () => {
    await planner.setSchedule({
      name: 'hourly',
      task: 'record',
      cron: '7 * * * *',
      missedSlotGrace: GRACE,
    });
    await planner.setSchedule({
      name: 'failing',
      task: 'record',
      cron: '9 * * * *',
      missedSlotGrace: GRACE,
      payload: { fail: 'boom' },
    });
    await planner.setSchedule({ name: 'paused', task: 'record', cron: '11 * * * *' });
    await planner.pauseSchedule('paused');
    await planner.setSchedule({
      name: 'passedOneOff',
      task: 'record',
      cron: new Date(Date.now() - 60_000),
    });
    // Two slots missed (past their grace), one late but within it; the failing schedule's first
    // slot runs, fails and waits an hour for its retry.
    await moveSlotsBack('hourly', [180, 120, 10]);
    await moveSlotsBack('failing', [10]);
    await waitFor(
      'the late slots to be claimed',
      async () => {
        const hourly = await pastSlots('hourly');
        const [failing] = await pastSlots('failing');
        return (
          hourly.length === 3 &&
          hourly.every((slot) => slot.state === 'completed' || slot.state === 'skipped') &&
          failing?.state === 'failed' &&
          failing.queued
        );
      },
      20_000,
      100,
    );
    // Three older slots whose jobs' records are gone (deleted): six past slots in all.
    await db.query(
      `INSERT INTO jobs."jobScheduleSlot" (schedule, slot, "jobId")
       SELECT 'hourly', now() - make_interval(secs => ago), gen_random_uuid()
       FROM unnest(ARRAY[240, 300, 360]) AS ago`,
    );
    const hourlySlots = await pastSlots('hourly');
    const [failingSlot] = await pastSlots('failing');

    const before = await planner.nextRuns('hourly', 3);
    const { schedules } = await json<{ schedules: ListedScheduleInfo[] }>(api('schedules'));
    const after = await planner.nextRuns('hourly', 3);
    const byName = Object.fromEntries(schedules.map((schedule) => [schedule.name, schedule]));
    expect(Object.keys(byName)).toEqual(['failing', 'hourly', 'passedOneOff', 'paused']);

    const iso = (dates: Date[]) => dates.map((date) => date.toISOString());
    expect([iso(before), iso(after)]).toContainEqual(byName.hourly.nextRuns);
    expect(byName.hourly.lastRuns).toEqual(
      hourlySlots.slice(0, 5).map((slot) => ({
        slot: slot.slot.toISOString(),
        jobId: slot.jobId,
        state: slot.state,
      })),
    );
    expect(byName.hourly.lastRuns.map((run) => run.state)).toEqual([
      'completed',
      'skipped',
      'skipped',
      null,
      null,
    ]);
    // Queued again after its failed attempt: the job is pending, whatever its history row says.
    expect(byName.failing.lastRuns).toEqual([
      { slot: failingSlot.slot.toISOString(), jobId: failingSlot.jobId, state: 'pending' },
    ]);
    expect(byName.failing.nextRuns).toHaveLength(3);
    expect(byName.paused).toMatchObject({ paused: true, nextRuns: [], lastRuns: [] });
    expect(byName.passedOneOff).toMatchObject({ paused: false, nextRuns: [], lastRuns: [] });
  }, 60_000);
});

describe('GET api/jobs/:id', () => {
  it("gives the cron slot a schedule's job was planned for, and null for a job added by hand", async () => {
    await planner.setSchedule({ name: 'runNow', task: 'record', cron: '13 * * * *' });
    const cronJob = await planner.triggerSchedule('runNow');
    const { id: plainJob } = await server.queue.addJob({ task: 'record' });
    const [{ slot }] = await db.query<{ slot: Date }>(
      `SELECT slot FROM jobs."jobScheduleSlot" WHERE "jobId" = $1`,
      [cronJob],
    );

    const cron = await json<{ cronSlot: CronSlotInfo | null }>(api(`jobs/${cronJob}`));
    expect(cron.cronSlot).toEqual({ schedule: 'runNow', slot: slot.toISOString() });
    const plain = await json<{ cronSlot: CronSlotInfo | null }>(api(`jobs/${plainJob}`));
    expect(plain.cronSlot).toBeNull();
  });
});

// Last: its schedules are not the API's above.
describe("the statement of the schedules' last runs", () => {
  it("reads each schedule's latest slots from the primary key, never every slot", async () => {
    // Twenty every-second schedules with a day of slot rows each (a history kept a day).
    await db.query(
      `INSERT INTO jobs."jobSchedule" (name, task, cron)
       SELECT 'busy' || i, 'record', '* * * * * *' FROM generate_series(1, 20) AS i`,
    );
    await db.query(
      `INSERT INTO jobs."jobScheduleSlot" (schedule, slot, "jobId")
       SELECT 'busy' || i, date_trunc('second', now()) - g * interval '1 second', gen_random_uuid()
       FROM generate_series(1, 20) AS i, generate_series(0, 86399, 10) AS g`,
    );
    await db.query('ANALYZE jobs."jobScheduleSlot"');
    const slotReads = (
      await executedPlanNodes(db, adminSql(toSchemaName('jobs')).lastRuns, [5])
    ).filter((node) => node['Relation Name'] === 'jobScheduleSlot');
    expect(slotReads.map((node) => node['Node Type'])).not.toContain('Seq Scan');
    // At most 5 rows of each schedule's slots (another plan would read 8,640 each).
    expect(slotReads.every((node) => node['Actual Rows']! <= 5)).toBe(true);
    expect(slotReads.length).toBeGreaterThan(0);
  });
});

// After the one above: its twenty schedules are the many this counts the statements of.
describe('the statements of GET api/schedules', () => {
  it('are two however many schedules there are: the schedules with their next runs, and every last run', async () => {
    // The statements the call itself sends, told apart from the runner's and the heartbeat's
    // meanwhile by the async context they are sent from.
    const call = new AsyncLocalStorage<true>();
    const sent: string[] = [];
    const { query: sendOne, withClient: sendOnClient } = JobsDatabase.prototype;
    const counted = <T extends (...args: never[]) => unknown>(method: T) =>
      function (this: unknown, ...args: Parameters<T>) {
        if (call.getStore()) sent.push(typeof args[0] === 'string' ? args[0] : 'a transaction');
        return method.apply(this, args);
      };
    const query = jest
      .spyOn(JobsDatabase.prototype, 'query')
      .mockImplementation(counted(sendOne) as never);
    const withClient = jest
      .spyOn(JobsDatabase.prototype, 'withClient')
      .mockImplementation(counted(sendOnClient) as never);
    try {
      const { schedules } = await call.run(true, () =>
        server.app.get(JobsAdminService).schedules(),
      );
      expect(schedules.length).toBeGreaterThanOrEqual(20);
      expect(sent).toHaveLength(2);
      const busy = schedules.find((schedule) => schedule.name === 'busy1')!;
      // Every second: its next three slots, a second apart.
      expect(
        busy.nextRuns.map((run) => new Date(run).getTime() - busy.nextRuns[0].getTime()),
      ).toEqual([0, 1000, 2000]);
      expect(busy.lastRuns).toHaveLength(5);
    } finally {
      query.mockRestore();
      withClient.mockRestore();
    }
  });
});
