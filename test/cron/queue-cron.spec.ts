import { Injectable } from '@nestjs/common';
import { CronPlannerService, JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_queue_cron');

/** A cron task in a queue of its own, whose slots are far off: its planned jobs stay pending. */
@JobTask({ name: 'dailyReport', queue: 'reports', cron: '0 0 * * *' })
@Injectable()
class DailyReport implements JobTaskHandler {
  run(): void {}
}

const queuesOf = async (task: string) =>
  (
    await db.query<{ queue: string }>('SELECT DISTINCT queue FROM jobs.jobs WHERE task = $1', [
      task,
    ])
  ).map((row) => row.queue);

it("files planned and triggered cron jobs under their task's queue while they wait", async () => {
  // This instance plans, and never runs: a triggered job stays queued where it was filed.
  const app = await startJobsApp(db.url, {
    tasks: [DailyReport],
    options: { runJobs: false, scheduledCheck: 1, scheduleHorizon: 5 * 86_400, maxPlannedSlots: 3 },
  });
  await waitFor('the planner to plan', async () => (await queuesOf('dailyReport')).length > 0);
  expect(await queuesOf('dailyReport')).toEqual(['reports']);

  const id = await app.module.get(CronPlannerService).triggerSchedule('dailyReport');
  expect((await app.queue.getJob(id))?.queue).toBe('reports');
  const [row] = await db.query<{ queue: string }>('SELECT queue FROM jobs.jobs WHERE id = $1', [
    id,
  ]);
  expect(row.queue).toBe('reports');
  const [queue] = (await app.queue.getQueues()).filter((q) => q.name === 'reports');
  expect(queue.pending).toBe(4);
});
