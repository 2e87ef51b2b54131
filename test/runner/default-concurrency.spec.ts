import { availableParallelism } from 'node:os';
import { Injectable } from '@nestjs/common';
import { DEFAULT_CONCURRENCY, JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { withDeadline } from '../support/deadline.js';

const db = useTestDatabase();
let running = 0;
let mostAtOnce = 0;
let finished = 0;
let allRunning!: () => void;
const allStarted = new Promise<void>((resolve) => (allRunning = resolve));

/**
 * An I/O-bound task (a 200 ms call to some service): it waits until all ten run at once, or 2 s
 * when they cannot (then `mostAtOnce` says how many did), so the test waits on an event, not a clock.
 */
@JobTask('io')
@Injectable()
class IoTask implements JobTaskHandler {
  async run(): Promise<void> {
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    if (running === 10) allRunning();
    await withDeadline(allStarted, 2000, () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 200));
    running--;
    finished++;
  }
}

it('runs ten in-process I/O jobs at once on a module left at its defaults, whatever the CPUs', async () => {
  expect(DEFAULT_CONCURRENCY).toBe(10);
  const app = await startJobsApp(db.url, { tasks: [IoTask] });
  try {
    await app.queue.addJobs(Array.from({ length: 10 }, () => ({ task: 'io' })));
    await waitFor('10 finished jobs', () => finished === 10, 40_000);
    // `workers: 'auto'` is CPUs − 1 (1 on a 2-core container): the threads, not in-process jobs.
    expect({ mostAtOnce, cpus: availableParallelism() }).toEqual({
      mostAtOnce: 10,
      cpus: availableParallelism(),
    });
  } finally {
    await app.close();
  }
}, 60_000);
