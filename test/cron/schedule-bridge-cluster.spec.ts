import { Inject, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Cron, Interval, ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import {
  CronPlannerService,
  DurableCronJobError,
  JobsError,
  ScheduleModuleConflictError,
} from 'nestjs-pg-jobs';
import { JobsScheduleModule } from 'nestjs-pg-jobs/schedule';
import { quietLogger, startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_schedule_bridge');

const INSTANCE = 'INSTANCE';

/** The dependency the cron method uses: each app gets its own, and records what it was told. */
@Injectable()
class TickLog {
  readonly ticks: number[] = [];
  constructor(@Inject(INSTANCE) readonly instance: string) {}
}

/** An ordinary @nestjs/schedule provider, exactly as an app that used ScheduleModule has it. */
@Injectable()
class Ticker {
  beats = 0;
  constructor(private readonly log: TickLog) {}

  @Cron('* * * * * *', { name: 'tick' })
  tick() {
    this.log.ticks.push(Date.now());
  }

  @Interval(100)
  beat() {
    this.beats++;
  }
}

const WINDOW_SECONDS = 8;

const startInstance = (name: string, imports = [JobsScheduleModule.forRoot()]) =>
  startJobsApp(db.url, {
    providers: [Ticker, TickLog, { provide: INSTANCE, useValue: name }],
    imports,
    // Every-second slots: planned 30 ahead, found by a poll 5 times a second.
    options: { pollingCheck: 0.2, scheduledCheck: 1, maxPlannedSlots: 30 },
  });

it(`runs an unmodified @Cron('* * * * * *') method of three instances once per slot over ${WINDOW_SECONDS} s, on the instance Nest made, while @Interval runs on every instance`, async () => {
  const apps: JobsApp[] = [];
  for (const name of ['a', 'b', 'c']) apps.push(await startInstance(name));
  const [{ now: from }] = await db.query<{ now: Date }>('SELECT now()');
  const until = new Date(from.getTime() + WINDOW_SECONDS * 1000);
  const windowSlots = () =>
    db.query<{ slot: Date; state: string | null; attempt: number | null }>(
      `SELECT p.slot, h.state, h.attempt
       FROM jobs."jobScheduleSlot" p LEFT JOIN jobs."jobHistory" h ON h.id = p."jobId"
       WHERE p.schedule = 'tick' AND p.slot > $1 AND p.slot <= $2 ORDER BY p.slot`,
      [from, until],
    );
  await waitFor(
    `every slot of ${WINDOW_SECONDS} s to have run`,
    async () => {
      const rows = await windowSlots();
      return rows.length === WINDOW_SECONDS && rows.every((row) => row.state === 'completed');
    },
    WINDOW_SECONDS * 1000 + 20_000,
    100,
  );
  const rows = await windowSlots();
  // One slot per second, none lost, each run once (a second run would be attempt 2).
  expect(rows.map((row) => row.slot.getTime() - rows[0].slot.getTime())).toEqual(
    Array.from({ length: WINDOW_SECONDS }, (_, i) => i * 1000),
  );
  expect(rows.map((row) => row.attempt)).toEqual(rows.map(() => 1));

  const registry = apps[0].module.get(SchedulerRegistry);
  expect(registry.getIntervals()).toHaveLength(1);
  expect(() => registry.getCronJob('tick')).toThrow(DurableCronJobError);
  expect(() => registry.getCronJob('tick')).toThrow('pauseSchedule(name)');
  expect(await apps[0].module.get(CronPlannerService).listSchedules()).toEqual([
    expect.objectContaining({
      name: 'tick',
      task: 'tick',
      cron: '* * * * * *',
      timezone: 'UTC',
      overlap: 'allow',
      source: 'static',
    }),
  ]);

  await Promise.all(apps.map((app) => app.close()));
  const tickers = apps.map((app) => app.module.get(Ticker));
  const logs = apps.map((app) => app.module.get(TickLog));
  expect(logs.map((log) => log.instance)).toEqual(['a', 'b', 'c']);
  // Every run of the cluster went through the dependency of the instance that ran it, and every
  // run is one completed job: no slot ran twice, anywhere, across the whole test.
  const [{ completed, other }] = await db.query<{ completed: number; other: number }>(
    `SELECT count(*) FILTER (WHERE state = 'completed' AND attempt = 1)::int AS completed,
            count(*) FILTER (WHERE NOT (state = 'completed' AND attempt = 1))::int AS other
     FROM jobs."jobHistory" WHERE task = 'tick'`,
  );
  expect(logs.reduce((sum, log) => sum + log.ticks.length, 0)).toBe(completed);
  expect(completed).toBeGreaterThanOrEqual(WINDOW_SECONDS);
  expect(other).toBe(0);
  // @Interval stays local: it ticked on each instance, every 100 ms of the test.
  for (const ticker of tickers) expect(ticker.beats).toBeGreaterThanOrEqual(WINDOW_SECONDS * 5);
}, 90_000);

it('fails the boot, naming the line to change, when ScheduleModule.forRoot() with cron jobs on is imported too', async () => {
  const boot = startInstance('conflicting', [
    JobsScheduleModule.forRoot(),
    ScheduleModule.forRoot(),
  ]);
  await expect(boot).rejects.toThrow(ScheduleModuleConflictError);
  await expect(boot).rejects.toThrow(
    'Replace that ScheduleModule.forRoot() import with JobsScheduleModule.forRoot()',
  );
});

it('fails the boot when ScheduleModule.forRoot() is imported a second time, even without cron jobs', async () => {
  await expect(
    startInstance('twice', [
      JobsScheduleModule.forRoot(),
      ScheduleModule.forRoot({ cronJobs: false }),
    ]),
  ).rejects.toThrow('would run once per import');
});

it('fails the boot of an app that imports JobsScheduleModule without JobsModule', async () => {
  const module = await Test.createTestingModule({
    imports: [JobsScheduleModule.forRoot()],
    providers: [Ticker, TickLog, { provide: INSTANCE, useValue: 'alone' }],
  })
    .setLogger(quietLogger)
    .compile();
  const init = module.init();
  await expect(init).rejects.toThrow(JobsError);
  await expect(init).rejects.toThrow('JobsScheduleModule found no JobsModule');
  await module.close();
});
