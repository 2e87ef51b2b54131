import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let running = 0;
let mostAtOnce = 0;
let finished = 0;

@JobTask('slow')
@Injectable()
class SlowTask implements JobTaskHandler {
  async run(): Promise<void> {
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    await new Promise((resolve) => setTimeout(resolve, 60));
    running--;
    finished++;
  }
}

it('never runs more than `concurrency` jobs at once, even when notifications arrive together', async () => {
  const app = await startJobsApp(db.url, {
    tasks: [SlowTask],
    options: { concurrency: 3, pollingCheck: 0.05 },
  });
  try {
    // One notification per job, all at once: every one of them wakes the runner.
    await Promise.all(Array.from({ length: 30 }, () => app.queue.addJob({ task: 'slow' })));
    await waitFor('30 finished jobs', () => finished === 30, 20_000);
    expect(mostAtOnce).toBe(3);
  } finally {
    await app.close();
  }
});
