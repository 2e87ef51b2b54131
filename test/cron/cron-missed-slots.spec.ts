import { Inject, Injectable } from '@nestjs/common';
import { CronPlannerService, JobEventsService, JobTask } from 'nestjs-pg-jobs';
import type {
  CronScheduleOptions,
  JobContext,
  JobTaskHandler,
  JobsModuleOptions,
} from 'nestjs-pg-jobs';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import type { SchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { MIGRATIONS } from '../../libs/jobs/src/schema/migrations.js';
import type { Migration } from '../../libs/jobs/src/schema/migrations.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_cron_missed');

/** Records every run it is given: what actually ran, whatever history says. */
@JobTask('tick')
@Injectable()
class TickTask implements JobTaskHandler {
  async run(_payload: unknown, ctx: JobContext) {
    await db.query('INSERT INTO ran ("jobId") VALUES ($1)', [ctx.id]);
  }
}

/** Subscribed before the app bootstraps, so it hears the boot's first claim. */
/** `id reason` of every skipped event heard. */
const skippedEvents: string[] = [];
@Injectable()
class SkipWatcher {
  constructor(@Inject(JobEventsService) events: JobEventsService) {
    events.on('skipped').subscribe((event) => skippedEvents.push(`${event.id} ${event.reason}`));
  }
}

const GRACE = 1;
/** Long enough to cover the downtime: the first instance leaves the slots of the next 30 s planned. */
const PLANNED_AHEAD = 30;
const DOWNTIME = 5;

const dbNow = async () => (await db.query<{ now: Date }>('SELECT now()'))[0].now;

interface SlotOutcome {
  jobId: string;
  slot: Date;
  state: string | null;
  startedAt: Date | null;
  /** When the claim judged it: a job's start, or its skip. */
  claimedAt: Date | null;
  ran: number;
}

/** Every planned slot of `schedule`, with its job's history state and how often the handler ran it. */
function outcomes(schedule: string): Promise<SlotOutcome[]> {
  return db.query<SlotOutcome>(
    `SELECT p."jobId", p.slot, h.state, h."startedAt", COALESCE(h."startedAt", h."completedAt") AS "claimedAt",
            (SELECT count(*)::int FROM ran r WHERE r."jobId" = p."jobId") AS ran
     FROM jobs."jobScheduleSlot" p LEFT JOIN jobs."jobHistory" h ON h.id = p."jobId"
     WHERE p.schedule = $1 ORDER BY p.slot`,
    [schedule],
  );
}

/** Ran, and started more than the grace after its slot. */
const late = (row: SlotOutcome) =>
  row.ran > 0 && row.startedAt!.getTime() > row.slot.getTime() + GRACE * 1000;

/**
 * Moves every time the database holds `seconds` into the past, as if every instance had been down
 * that long: the planner and the claim judge slots by the database's clock alone.
 */
async function moveIntoThePast(seconds: number): Promise<void> {
  const columns: [table: string, columns: string[]][] = [
    ['jobs.jobs', ['waitUntil', 'startBy', 'createdAt', 'updatedAt']],
    ['jobs."jobHistory"', ['createdAt', 'startedAt', 'completedAt', 'updatedAt']],
    ['jobs."jobSchedule"', ['plannedUntil', 'createdAt', 'updatedAt']],
    ['jobs."jobLock"', ['lastCheckedAt']],
    ['jobs.instances', ['startedAt', 'heartbeatAt']],
    ['jobs."jobScheduleSlot"', ['plannedAt']],
    ['ran', ['ranAt']],
  ];
  for (const [table, names] of columns) {
    const set = names.map((name) => `"${name}" = "${name}" - make_interval(secs => $1)`);
    await db.query(`UPDATE ${table} SET ${set.join(', ')}`, [seconds]);
  }
  // By way of a year ago: the primary key is checked row by row, and a slot moved onto one not
  // moved yet would collide with it.
  await db.query(
    `UPDATE jobs."jobScheduleSlot" SET slot = slot - interval '1 year' - make_interval(secs => $1)`,
    [seconds],
  );
  await db.query(`UPDATE jobs."jobScheduleSlot" SET slot = slot + interval '1 year'`);
}

/**
 * One instance runs an every-second schedule, every instance goes down for `DOWNTIME` seconds with
 * the next `PLANNED_AHEAD` slots planned, then one instance boots. Returns the database's time at the
 * restart and every slot's outcome once slots after the restart have run.
 */
async function downAndUp(schedule: CronScheduleOptions) {
  await db.query('TRUNCATE ran');
  const options: Partial<JobsModuleOptions> = {
    schedules: [schedule],
    pollingCheck: 0.2,
    scheduledCheck: 1,
    maxPlannedSlots: PLANNED_AHEAD,
    // The first claim after the restart takes every due slot at once (one transaction, one now()).
    concurrency: 20,
  };
  const ranCount = async () =>
    (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ran'))[0].n;
  const first = await startJobsApp(db.url, { tasks: [TickTask], options });
  await waitFor('the schedule to run', async () => (await ranCount()) >= 2, 20_000, 100);
  await first.close();
  const closedAt = await dbNow();
  await moveIntoThePast(DOWNTIME);
  // When every instance went down, on the clock the rows now tell.
  const downAt = new Date(closedAt.getTime() - DOWNTIME * 1000);
  const restartAt = await dbNow();
  const second = await startJobsApp(db.url, { tasks: [TickTask], options });
  await waitFor(
    'three slots after the restart to run',
    async () =>
      (await outcomes(schedule.name!)).filter(
        (row) => row.ran > 0 && row.slot.getTime() > restartAt.getTime(),
      ).length >= 3,
    20_000,
    100,
  );
  await second.close();
  const rows = await outcomes(schedule.name!);
  // Slots that fell due while every instance was down, already past their grace at the restart.
  const missed = rows.filter(
    (row) =>
      row.slot.getTime() > downAt.getTime() &&
      row.slot.getTime() < restartAt.getTime() - GRACE * 1000,
  );
  // The restart's first claim: it took every due slot at once (fewer than `concurrency`).
  const firstClaimAt = new Date(
    Math.min(
      ...rows
        .filter((row) => row.claimedAt && row.slot.getTime() > downAt.getTime())
        .map((row) => row.claimedAt!.getTime()),
    ),
  );
  return { downAt, restartAt, firstClaimAt, rows, missed };
}

beforeAll(async () => {
  await db.query(
    'CREATE TABLE ran ("jobId" uuid NOT NULL, "ranAt" timestamptz NOT NULL DEFAULT now())',
  );
});

it("with missedSlots: 'skip', runs no planned slot more than missedSlotGrace after its time once every instance was down, and records those slots skipped", async () => {
  const { rows, missed } = await downAndUp({
    name: 'skipper',
    task: 'tick',
    cron: '* * * * * *',
    missedSlotGrace: GRACE,
  });

  // Nothing ran late: not the downtime's slots, nor any other (the claim's check is exact).
  expect(rows.filter(late)).toEqual([]);
  expect(missed.length).toBeGreaterThanOrEqual(3);
  expect(missed.filter((row) => row.ran > 0)).toEqual([]);
  expect(missed.map((row) => row.state)).toEqual(missed.map(() => 'skipped'));
  expect(rows.filter((row) => row.ran > 1)).toEqual([]);
}, 60_000);

it("with missedSlots: 'runOnce', runs exactly one of the slots missed while every instance was down, the latest, and skips the older ones", async () => {
  const { downAt, firstClaimAt, rows } = await downAndUp({
    name: 'catcher',
    task: 'tick',
    cron: '* * * * * *',
    missedSlots: 'runOnce',
    missedSlotGrace: GRACE,
  });

  // The slots already past their grace when the restart's first claim judged them. Judged in one
  // statement, they are exact whatever the machine's load: one ran, the latest; the others were
  // skipped. (Later claims may legitimately run a slot late under load: runOnce runs the latest
  // missed slot of each claim.)
  const missedAtClaim = rows.filter(
    (row) =>
      row.slot.getTime() > downAt.getTime() &&
      row.slot.getTime() < firstClaimAt.getTime() - GRACE * 1000,
  );
  expect(missedAtClaim.length).toBeGreaterThanOrEqual(3);
  const [latest, ...older] = [...missedAtClaim].reverse();
  expect([latest.state, latest.ran]).toEqual(['completed', 1]);
  expect(late(latest)).toBe(true);
  expect(older.map((row) => [row.state, row.ran])).toEqual(older.map(() => ['skipped', 0]));
  expect(rows.filter((row) => row.ran > 1)).toEqual([]);
}, 60_000);

it('skips a planned job queued past its grace even on an instance that did not plan it (a busy queue is missing its slots too)', async () => {
  // Plans only; its jobs are then made late in SQL, as a backlog would leave them.
  const planning = await startJobsApp(db.url, {
    options: { allowUnknownTasks: true, runJobs: false, scheduledCheck: 3600, maxPlannedSlots: 3 },
  });
  const planner = planning.module.get(CronPlannerService);
  await planner.setSchedule({ name: 'hourly', task: 'tick', cron: '7 * * * *' });
  await planner.setSchedule({
    name: 'hourlyOnce',
    task: 'tick',
    cron: '8 * * * *',
    missedSlots: 'runOnce',
  });
  await planning.close();
  // Three slots each, the latest of them two minutes ago: all past the default 60 s grace.
  await db.query(
    `WITH shifted AS (
       SELECT p.schedule, p.slot, p."jobId",
              now() - (row_number() OVER (PARTITION BY p.schedule ORDER BY p.slot DESC) + 1)
                      * interval '1 minute' AS slot2
       FROM jobs."jobScheduleSlot" p
     ), slots AS (
       UPDATE jobs."jobScheduleSlot" p SET slot = s.slot2 FROM shifted s
       WHERE p.schedule = s.schedule AND p.slot = s.slot RETURNING p."jobId", p.slot
     )
     UPDATE jobs.jobs j SET "waitUntil" = s.slot, "startBy" = s.slot + interval '60 seconds'
     FROM slots s WHERE j.id = s."jobId"`,
  );
  // The runner boots, plans (nothing: the marks are ahead), and claims.
  const runner = await startJobsApp(db.url, {
    tasks: [TickTask],
    providers: [SkipWatcher],
    options: { pollingCheck: 0.2, scheduledCheck: 3600, maxPlannedSlots: 3 },
  });
  const past = async (schedule: string) =>
    (await outcomes(schedule)).filter((row) => row.slot.getTime() < Date.now());
  await waitFor(
    'the late jobs to be claimed',
    async () =>
      (
        await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM jobs.jobs WHERE "waitUntil" <= now()`,
        )
      )[0].n === 0 && (await past('hourly')).every((row) => row.state !== null),
    20_000,
    100,
  );
  const [first] = await past('hourly');
  // What getJob says of a skipped slot: it ended without an attempt, and why.
  expect(await runner.queue.getJob(first.jobId)).toMatchObject({
    state: 'skipped',
    attempt: 0,
    startedAt: null,
    completedAt: expect.any(Date),
    lastErrorMessage: expect.stringContaining('Missed its cron slot'),
  });
  await runner.close();

  const hourly = await past('hourly');
  expect(hourly.map((row) => [row.state, row.ran])).toEqual([
    ['skipped', 0],
    ['skipped', 0],
    ['skipped', 0],
  ]);
  const hourlyOnce = await past('hourlyOnce');
  expect(hourlyOnce.map((row) => [row.state, row.ran])).toEqual([
    ['skipped', 0],
    ['skipped', 0],
    ['completed', 1],
  ]);
  // The runner told its listeners (and its metrics) of each job its claim skipped.
  expect([...skippedEvents].sort()).toEqual(
    [...hourly, ...hourlyOnce]
      .filter((row) => row.state === 'skipped')
      .map((row) => `${row.jobId} missed`)
      .sort(),
  );
}, 60_000);

it("runs the catch-up of a runOnce schedule whose latest missed slot is older than the slot rows' retention (a daily job, hours down)", async () => {
  const planning = await startJobsApp(db.url, {
    options: { allowUnknownTasks: true, runJobs: false, scheduledCheck: 3600 },
  });
  await planning.module
    .get(CronPlannerService)
    .setSchedule({ name: 'dailyOnce', task: 'tick', cron: '0 4 * * *', missedSlots: 'runOnce' });
  await planning.close();
  // Its one planned slot, three hours ago: every instance was down since before it.
  await db.query(
    `WITH slots AS (
       UPDATE jobs."jobScheduleSlot" SET slot = now() - interval '3 hours'
       WHERE schedule = 'dailyOnce' RETURNING "jobId", slot
     )
     UPDATE jobs.jobs j SET "waitUntil" = s.slot, "startBy" = s.slot + interval '60 seconds'
     FROM slots s WHERE j.id = s."jobId"`,
  );
  // Its boot round prunes slot rows older than an hour before the runner claims.
  const runner = await startJobsApp(db.url, {
    tasks: [TickTask],
    options: { pollingCheck: 0.2, scheduledCheck: 3600 },
  });
  const [missed] = await waitFor(
    'the missed slot to be claimed',
    async () => {
      const rows = (await outcomes('dailyOnce')).filter((row) => row.slot.getTime() < Date.now());
      return rows.length === 1 && rows[0].state !== null && rows[0].state !== 'active' && rows;
    },
    20_000,
    100,
  );
  await runner.close();
  expect([missed.state, missed.ran]).toEqual(['completed', 1]);
}, 60_000);

it('gives the cron jobs queued before the upgrade their deadline, but not those that already started', async () => {
  const schema = toSchemaName('upgraded');
  await db.query(`CREATE SCHEMA ${schema.quoted}`);
  for (const migration of MIGRATIONS.filter((m) => m.version <= 4)) {
    await db.query(transactionalSql(migration, schema));
  }
  const s = schema.quoted;
  await db.query(
    `INSERT INTO ${s}."jobSchedule" (name, task, cron) VALUES ('old', 'tick', '* * * * *');
     INSERT INTO ${s}."jobScheduleSlot" (schedule, slot, "jobId") VALUES
       ('old', '2026-01-01T00:00:00Z', '00000000-0000-4000-8000-000000000001'),
       ('old', '2026-01-01T00:01:00Z', '00000000-0000-4000-8000-000000000002');
     INSERT INTO ${s}.jobs (id, task, "waitUntil", "maxRetries", "isScheduled", retries) VALUES
       ('00000000-0000-4000-8000-000000000001', 'tick', '2026-01-01T00:00:00Z', 5, true, 0),
       ('00000000-0000-4000-8000-000000000002', 'tick', '2026-01-01T00:01:00Z', 5, true, 1),
       ('00000000-0000-4000-8000-000000000003', 'tick', '2026-01-01T00:00:00Z', 5, false, 0);
     -- The second slot's job failed once and waits for its retry.
     INSERT INTO ${s}."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt")
       VALUES ('00000000-0000-4000-8000-000000000002', 'tick', 'failed', 1, 5, now());`,
  );

  const [migration6] = MIGRATIONS.filter((m) => m.version === 6);
  await db.query(transactionalSql(migration6, schema));

  expect(await db.query(`SELECT id, "startBy" FROM ${s}.jobs ORDER BY id`)).toEqual([
    { id: '00000000-0000-4000-8000-000000000001', startBy: new Date('2026-01-01T00:01:00Z') },
    { id: '00000000-0000-4000-8000-000000000002', startBy: null },
    { id: '00000000-0000-4000-8000-000000000003', startBy: null },
  ]);
  await expect(
    db.query(
      `INSERT INTO ${s}."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt")
       VALUES (gen_random_uuid(), 'tick', 'skipped', 0, 5, now())`,
    ),
  ).resolves.toEqual([]);
});

/** The SQL of a migration that runs in one transaction (1-4 and 6 do). */
function transactionalSql(migration: Migration, schema: SchemaName): string {
  if (migration.transactional === false)
    throw new Error(`Migration ${migration.version} is online`);
  return migration.sql(schema);
}
