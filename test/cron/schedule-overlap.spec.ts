import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { CronPlannerService, JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { JobsScheduleModule } from 'nestjs-pg-jobs/schedule';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_schedule_overlap');

/** A run: when it started and ended, on one clock (every instance is in this process). */
interface Run {
  schedule: string;
  start: number;
  end?: number;
}
const runs: Run[] = [];
const HANDLER_MS = 2500;

async function slowRun(schedule: string): Promise<void> {
  const run: Run = { schedule, start: Date.now() };
  runs.push(run);
  // The handler's own work, slower than its schedule: what the test is about.
  await new Promise((resolve) => setTimeout(resolve, HANDLER_MS));
  run.end = Date.now();
}

@Injectable()
class SlowCron {
  @Cron('* * * * * *', { name: 'slowCron', waitForCompletion: true })
  slow() {
    return slowRun('slowCron');
  }
}

@JobTask('slowTask')
@Injectable()
class SlowTask implements JobTaskHandler {
  run() {
    return slowRun('slowTask');
  }
}

const outcomes = (schedule: string) =>
  db.query<{ state: string; message: string | null }>(
    `SELECT h.state, h."lastErrorMessage" AS message
     FROM jobs."jobScheduleSlot" p JOIN jobs."jobHistory" h ON h.id = p."jobId"
     WHERE p.schedule = $1 ORDER BY p.slot`,
    [schedule],
  );

it('never starts a run of an every-second schedule with a 2.5 s handler while the previous one is active, on any instance, and records the slots it skipped (waitForCompletion, and overlap: "skip" on setSchedule)', async () => {
  const options = { pollingCheck: 0.2, scheduledCheck: 1, maxPlannedSlots: 30, concurrency: 4 };
  const setup = {
    tasks: [SlowTask],
    providers: [SlowCron],
    imports: [JobsScheduleModule.forRoot()],
    options,
  };
  const first = await startJobsApp(db.url, setup);
  await first.module.get(CronPlannerService).setSchedule({
    name: 'slowSchedule',
    task: 'slowTask',
    cron: '* * * * * *',
    overlap: 'skip',
  });
  await startJobsApp(db.url, setup);

  const ended = (schedule: string) => runs.filter((run) => run.schedule === schedule && run.end);
  await waitFor(
    'three runs of each schedule to end',
    () => ended('slowCron').length >= 3 && ended('slowTask').length >= 3,
    30_000,
    100,
  );
  for (const schedule of ['slowCron', 'slowSchedule']) {
    const handler = schedule === 'slowCron' ? 'slowCron' : 'slowTask';
    const mine = runs.filter((run) => run.schedule === handler);
    // Each run started after the previous one ended (the last one may still be running).
    for (let i = 1; i < mine.length; i++) {
      expect(mine[i].start).toBeGreaterThanOrEqual(mine[i - 1].end!);
    }
    const rows = await outcomes(schedule);
    const skipped = rows.filter((row) => row.state === 'skipped');
    // A 2.5 s run on an every-second schedule covers at least the next two slots.
    expect(skipped.length).toBeGreaterThanOrEqual(2 * (ended(handler).length - 1));
    expect(skipped.map((row) => row.message)).toEqual(
      skipped.map(
        () =>
          `Not started: schedule "${schedule}" had a run active or a later slot due (overlap: 'skip').`,
      ),
    );
  }
  expect(
    (await first.module.get(CronPlannerService).listSchedules()).map(({ name, overlap }) => ({
      name,
      overlap,
    })),
  ).toEqual([
    { name: 'slowCron', overlap: 'skip' },
    { name: 'slowSchedule', overlap: 'skip' },
  ]);
}, 60_000);
