import { Injectable } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { CronPlannerService, InvalidCronOptionError } from 'nestjs-pg-jobs';
import { DurableCron, JobsScheduleModule } from 'nestjs-pg-jobs/schedule';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_schedule_options');

const ran: string[] = [];

@Injectable()
class Crons {
  @Cron('* * * * * *', { name: 'off', disabled: true })
  off() {
    ran.push('off');
  }

  @Cron('0 9 * * *', { name: 'tokyo', timeZone: 'Asia/Tokyo' })
  tokyo() {}

  @Cron('30 9 * * *', { name: 'offset', utcOffset: 330 })
  offset() {}

  @Cron(CronExpression.EVERY_DAY_AT_NOON)
  unnamed() {}

  @Cron(CronExpression.EVERY_HOUR, { name: 'late', threshold: 30_000 })
  late() {
    ran.push('late');
  }
}

const fast = { pollingCheck: 0.2, scheduledCheck: 1 };
const start = (providers: unknown[], timezone?: string) =>
  startJobsApp(db.url, {
    providers: providers as never,
    imports: [JobsScheduleModule.forRoot(timezone ? { timezone } : {})],
    options: fast,
  });

/** The wall-clock time of `date` in `timeZone`, as HH:MM. */
const wallTime = (date: Date, timeZone: string) =>
  new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit' }).format(date);

it("honours @Cron's name, timeZone, utcOffset (minutes), disabled and threshold, names an unnamed method Class.method, and reads it in the module's timezone", async () => {
  const app = await start([Crons], 'Europe/Berlin');
  const planner = app.module.get(CronPlannerService);
  const schedules = await planner.listSchedules();
  expect(
    schedules.map(({ name, timezone, missedSlotGrace }) => ({ name, timezone, missedSlotGrace })),
  ).toEqual([
    { name: 'Crons.unnamed', timezone: 'Europe/Berlin', missedSlotGrace: 60 },
    { name: 'late', timezone: 'Europe/Berlin', missedSlotGrace: 30 },
    { name: 'offset', timezone: 'UTC+05:30', missedSlotGrace: 60 },
    { name: 'tokyo', timezone: 'Asia/Tokyo', missedSlotGrace: 60 },
  ]);

  const tokyo = await planner.nextRuns('tokyo', 2);
  expect(tokyo.map((date) => date.toISOString().slice(11))).toEqual([
    '00:00:00.000Z',
    '00:00:00.000Z',
  ]);
  expect(tokyo[1].getTime() - tokyo[0].getTime()).toBe(86_400_000);
  expect((await planner.nextRuns('offset')).map((date) => date.toISOString().slice(11))).toEqual([
    '04:00:00.000Z',
  ]);
  expect(
    (await planner.nextRuns('Crons.unnamed', 3)).map((date) => wallTime(date, 'Europe/Berlin')),
  ).toEqual(['12:00', '12:00', '12:00']);

  // disabled: no schedule, but the method is a task all the same, runnable on demand.
  await (
    await app.queue.addJob({ task: 'off', promise: true })
  ).promise;
  expect(ran).toEqual(['off']);
  await app.close();
});

it('skips the slots that fell more than threshold ms before a stopped cluster came back, and runs those within it', async () => {
  const first = await start([Crons]);
  const planned = () =>
    db.query<{ jobId: string; slot: Date; grace: number }>(
      `SELECT p."jobId", p.slot, extract(epoch FROM j."startBy" - j."waitUntil")::float AS grace
       FROM jobs."jobScheduleSlot" p JOIN jobs.jobs j ON j.id = p."jobId"
       WHERE p.schedule = 'late' ORDER BY p.slot`,
    );
  await waitFor('slots of "late" to be planned', async () => (await planned()).length >= 2);
  await first.close();
  const [early, recent] = await planned();
  expect([early.grace, recent.grace]).toEqual([30, 30]);
  // The cluster was down while they fell due: one 90 s ago (past its 30 s), one 10 s ago.
  await db.query(
    `WITH moved AS (
       UPDATE jobs."jobScheduleSlot" p SET slot = date_trunc('second', now()) - t.ago * interval '1 second'
       FROM unnest($1::uuid[], $2::int[]) AS t(id, ago) WHERE p."jobId" = t.id
       RETURNING p."jobId", p.slot
     )
     UPDATE jobs.jobs j SET "waitUntil" = m.slot, "startBy" = m.slot + interval '30 seconds'
     FROM moved m WHERE j.id = m."jobId"`,
    [
      [early.jobId, recent.jobId],
      [90, 10],
    ],
  );
  ran.length = 0;
  const second = await start([Crons]);
  const states = () =>
    db.query<{ id: string; state: string; message: string | null }>(
      `SELECT id, state, "lastErrorMessage" AS message FROM jobs."jobHistory" WHERE id = ANY($1::uuid[]) ORDER BY "createdAt"`,
      [[early.jobId, recent.jobId]],
    );
  await waitFor('both slots to be judged', async () => {
    const rows = await states();
    return rows.length === 2 && rows.every((row) => row.state !== 'active');
  });
  const byId = new Map((await states()).map((row) => [row.id, row]));
  expect(byId.get(early.jobId)).toEqual(
    expect.objectContaining({
      state: 'skipped',
      message: expect.stringContaining('Missed its cron slot'),
    }),
  );
  expect(byId.get(recent.jobId)?.state).toBe('completed');
  expect(ran).toEqual(['late']);
  await second.close();
});

it('runs a @Cron(Date) method once, at that instant, and never plans it again', async () => {
  // The Date is read when the decorator runs: a class made now, due a few seconds after the boot.
  const at = new Date(Date.now() + 4000);
  let runs = 0;
  @Injectable()
  class Once {
    @Cron(at, { name: 'once' })
    once() {
      runs++;
    }
  }
  const app = await start([Once]);
  const planner = app.module.get(CronPlannerService);
  expect((await planner.listSchedules()).find((s) => s.name === 'once')?.cron).toBe(
    at.toISOString(),
  );
  expect(await planner.nextRuns('once', 5)).toEqual([at]);
  await waitFor('the one-off slot to run', () => runs === 1, 20_000);
  await planner.planSlots();
  // A second instance writes the same static schedule at its boot: nothing is planned again.
  await (await start([Once])).close();
  await planner.planSlots();
  const rows = await db.query<{ state: string; startedAt: Date }>(
    `SELECT h.state, h."startedAt" FROM jobs."jobHistory" h WHERE h.task = 'once'`,
  );
  expect(rows).toEqual([{ state: 'completed', startedAt: expect.any(Date) }]);
  expect(rows[0].startedAt.getTime()).toBeGreaterThanOrEqual(at.getTime());
  expect(await db.query(`SELECT 1 FROM jobs.jobs WHERE task = 'once'`)).toEqual([]);
  expect(await planner.nextRuns('once', 5)).toEqual([]);
  expect(runs).toBe(1);
  await app.close();
}, 60_000);

it('records a throwing @Cron method as failed, with its message, and retries it only under @DurableCron({ maxRetries }) or the module default', async () => {
  @Injectable()
  class Failing {
    @Cron('0 0 1 1 *', { name: 'failsOnce' })
    failsOnce() {
      throw new Error('no retry for me');
    }

    @Cron('0 0 1 1 *', { name: 'retried' })
    @DurableCron({ maxRetries: 2 })
    async retried() {
      throw new Error('retry me');
    }
  }
  const app = await startJobsApp(db.url, {
    providers: [Failing],
    imports: [JobsScheduleModule.forRoot()],
    options: { ...fast, retryBackoff: 3600 },
  });
  const planner = app.module.get(CronPlannerService);
  const ids = [
    await planner.triggerSchedule('failsOnce'),
    await planner.triggerSchedule('retried'),
  ];
  const ended = () =>
    db.query<{ id: string; state: string; message: string; maxRetries: number; requeued: boolean }>(
      `SELECT h.id, h.state, h."lastErrorMessage" AS message, h."maxRetries",
              EXISTS (SELECT 1 FROM jobs.jobs j WHERE j.id = h.id) AS requeued
       FROM jobs."jobHistory" h WHERE h.id = ANY($1::uuid[]) AND h.state <> 'active'`,
      [ids],
    );
  await waitFor('both runs to fail', async () => (await ended()).length === 2);
  const byId = new Map((await ended()).map((row) => [row.id, row]));
  expect(byId.get(ids[0])).toEqual(
    expect.objectContaining({
      state: 'failed',
      message: 'no retry for me',
      maxRetries: 0,
      requeued: false,
    }),
  );
  expect(byId.get(ids[1])).toEqual(
    expect.objectContaining({
      state: 'failed',
      message: 'retry me',
      maxRetries: 2,
      requeued: true,
    }),
  );
  await app.close();

  const retrying = await startJobsApp(db.url, {
    providers: [Failing],
    imports: [JobsScheduleModule.forRoot({ maxRetries: 1 })],
    options: { ...fast, retryBackoff: 3600 },
  });
  const id = await retrying.module.get(CronPlannerService).triggerSchedule('failsOnce');
  await waitFor('the run to fail and be queued again', async () => {
    const [row] = await db.query<{ queued: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM jobs.jobs WHERE id = $1 AND retries = 1) AS queued`,
      [id],
    );
    return row.queued;
  });
  await retrying.close();
});

it('fails the boot on @Cron options a durable schedule cannot honour', async () => {
  @Injectable()
  class Both {
    @Cron('* * * * *', { name: 'both', timeZone: 'Europe/Paris', utcOffset: 60 } as never)
    both() {}
  }
  @Injectable()
  class Spaced {
    @Cron('* * * * *', { name: 'has spaces' })
    spaced() {}
  }
  await expect(start([Both])).rejects.toThrow(InvalidCronOptionError);
  await expect(start([Both])).rejects.toThrow('"utcOffset" cannot be given with timeZone');
  await expect(start([Spaced])).rejects.toThrow('@Cron() on Spaced.spaced option "name"');
  expect(() => JobsScheduleModule.forRoot({ timezone: 'Mars/Olympus' })).toThrow(
    InvalidCronOptionError,
  );
  expect(() => JobsScheduleModule.forRoot({ maxRetries: -1 })).toThrow('"maxRetries"');
});
