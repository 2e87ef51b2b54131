import { Inject, Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { CronPlannerService, UnknownScheduleError } from 'nestjs-pg-jobs';
import { JobsScheduleModule } from 'nestjs-pg-jobs/schedule';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_schedule_control');

const INSTANCE = 'INSTANCE';
const ran: { schedule: string; instance: string }[] = [];

@Injectable()
class Crons {
  constructor(@Inject(INSTANCE) private readonly instance: string) {}

  @Cron('* * * * * *', { name: 'tick' })
  tick() {
    ran.push({ schedule: 'tick', instance: this.instance });
  }

  @Cron('0 0 1 1 *', { name: 'newYear' })
  newYear() {
    ran.push({ schedule: 'newYear', instance: this.instance });
  }
}

const start = (instance: string, runJobs = true) =>
  startJobsApp(db.url, {
    providers: [Crons, { provide: INSTANCE, useValue: instance }],
    imports: [JobsScheduleModule.forRoot()],
    options: { pollingCheck: 0.2, scheduledCheck: 1, maxPlannedSlots: 30, runJobs },
  });

const pendingJobs = async (task: string) =>
  (
    await db.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs.jobs WHERE task = $1', [
      task,
    ])
  )[0].n;
const completedSince = async (task: string, since: Date) =>
  (
    await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs."jobHistory"
       WHERE task = $1 AND state = 'completed' AND "startedAt" > $2`,
      [task, since],
    )
  )[0].n;
const dbNow = async () => (await db.query<{ now: Date }>('SELECT now()'))[0].now;
const paused = async (planner: CronPlannerService, name: string) =>
  (await planner.listSchedules()).find((schedule) => schedule.name === name)?.paused;

it('pauses, resumes and triggers a bridged @Cron method from another instance, durably', async () => {
  const worker = await start('worker');
  const control = (await start('control', false)).module.get(CronPlannerService);
  const bootedAt = await dbNow();
  await waitFor('tick to run', async () => (await completedSince('tick', bootedAt)) > 0);

  await control.pauseSchedule('tick');
  const pausedAt = await dbNow();
  // Its planned jobs are gone and no planning round brings them back, on any instance, even one
  // that boots and writes the same static schedule.
  expect(await pendingJobs('tick')).toBe(0);
  await worker.module.get(CronPlannerService).planSlots();
  const restarted = await start('restarted');
  await restarted.module.get(CronPlannerService).planSlots();
  expect(await pendingJobs('tick')).toBe(0);
  expect(await paused(control, 'tick')).toBe(true);
  await restarted.close();

  const resumedAt = await dbNow();
  await control.resumeSchedule('tick');
  expect(await paused(control, 'tick')).toBe(false);
  expect(await pendingJobs('tick')).toBeGreaterThan(0);
  await waitFor('tick to run again', async () => (await completedSince('tick', resumedAt)) > 0);
  // Slots of the pause were not wanted: none of them was planned, run or recorded as missed.
  const pauseSlots = await db.query(
    `SELECT slot FROM jobs."jobScheduleSlot" WHERE schedule = 'tick' AND slot > $1 AND slot <= $2`,
    [pausedAt, resumedAt],
  );
  expect(pauseSlots).toEqual([]);
  expect(
    await db.query(`SELECT 1 FROM jobs."jobHistory" WHERE task = 'tick' AND state <> 'completed'`),
  ).toEqual([]);

  // A yearly schedule, paused, run once now on the instance that runs jobs.
  await control.pauseSchedule('newYear');
  const id = await control.triggerSchedule('newYear');
  await waitFor('the triggered run', () => ran.some((run) => run.schedule === 'newYear'));
  expect(ran.filter((run) => run.schedule === 'newYear')).toEqual([
    { schedule: 'newYear', instance: 'worker' },
  ]);
  // The handler has returned; its completion is written just after (in a batch).
  await waitFor(
    'the triggered job to be completed',
    async () => (await worker.queue.getJob(id))?.state === 'completed',
  );
  expect(await paused(control, 'newYear')).toBe(true);
  expect(
    ran.filter((run) => run.schedule === 'tick').every((run) => run.instance !== 'control'),
  ).toBe(true);
}, 60_000);

it('previews the next runs, and refuses names with no schedule', async () => {
  const control = (await start('preview', false)).module.get(CronPlannerService);
  const runs = await control.nextRuns('tick', 3);
  expect(runs.map((run) => run.getTime() - runs[0].getTime())).toEqual([0, 1000, 2000]);
  expect(runs[0].getTime()).toBeGreaterThan((await dbNow()).getTime() - 1000);
  expect((await control.nextRuns('newYear'))[0].toISOString()).toMatch(/-01-01T00:00:00.000Z$/);
  for (const call of [
    () => control.pauseSchedule('nope'),
    () => control.resumeSchedule('nope'),
    () => control.triggerSchedule('nope'),
    () => control.nextRuns('nope'),
  ]) {
    await expect(call()).rejects.toThrow(UnknownScheduleError);
  }
  await expect(control.nextRuns('tick', 0)).rejects.toThrow('"count" must be an integer');
});
