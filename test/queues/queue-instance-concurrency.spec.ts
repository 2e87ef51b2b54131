import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const running = { reports: 0, other: 0 };
const most = { reports: 0, both: 0 };

@JobTask({ name: 'report', queue: 'reports' })
@Injectable()
class Report implements JobTaskHandler {
  async run(): Promise<void> {
    running.reports++;
    most.reports = Math.max(most.reports, running.reports);
    most.both = Math.max(most.both, running.reports + running.other);
    await new Promise((resolve) => setTimeout(resolve, 40));
    running.reports--;
  }
}

@JobTask('other')
@Injectable()
class Other implements JobTaskHandler {
  async run(): Promise<void> {
    running.other++;
    most.both = Math.max(most.both, running.reports + running.other);
    await new Promise((resolve) => setTimeout(resolve, 40));
    running.other--;
  }
}

it("runs at most a queue's own concurrency of its jobs on an instance, and fills the rest with other queues' jobs", async () => {
  const app = await startJobsApp(db.url, {
    tasks: [Report, Other],
    options: { concurrency: 6, pollingCheck: 0.2, queues: { reports: { concurrency: 2 } } },
  });
  // The reports come first in claim order: without their own limit they would take every slot.
  await app.queue.addJobs(Array.from({ length: 20 }, () => ({ task: 'report' })));
  await app.queue.addJobs(Array.from({ length: 20 }, () => ({ task: 'other' })));
  await waitFor(
    'the 40 jobs to complete',
    async () => {
      const [{ n }] = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM jobs."jobHistory" WHERE state = 'completed'`,
      );
      return n === 40;
    },
    30_000,
  );
  expect(most.reports).toBe(2);
  expect(most.both).toBe(6);
});
