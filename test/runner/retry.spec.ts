import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const starts = new Map<string, number[]>();

/** Fails its first `failures` attempts with a message naming the attempt, then succeeds. */
@JobTask('flaky')
@Injectable()
class FlakyTask implements JobTaskHandler<{ failures: number }> {
  run(payload: { failures: number }, ctx: JobContext): void {
    starts.set(ctx.id, [...(starts.get(ctx.id) ?? []), Date.now()]);
    if (ctx.attempt <= payload.failures) throw new Error(`attempt ${ctx.attempt} failed`);
  }
}

const RETRY_BACKOFF = 0.3;
const MAX_RETRY_DELAY = 600;
let app: JobsApp;
beforeAll(async () => {
  app = await startJobsApp(db.url, {
    tasks: [FlakyTask],
    options: {
      retryBackoff: RETRY_BACKOFF,
      maxRetryDelay: MAX_RETRY_DELAY,
      pollingCheck: 0.05,
      maxRetries: 3,
    },
  });
});
afterAll(() => app?.close());

it('completes on attempt 3 a task that fails twice, waiting 2^retries * retryBackoff between attempts', async () => {
  const { id, promise } = await app.queue.addJob({
    task: 'flaky',
    payload: { failures: 2 },
    promise: true,
  });
  await promise;
  const job = await app.queue.getJob(id);
  expect(job).toMatchObject({ state: 'completed', attempt: 3 });
  const [first, second, third] = starts.get(id)!;
  const backoffMs = RETRY_BACKOFF * 1000;
  // Never earlier than the backoff (a few ms of leeway between the database's clock and ours)...
  expect(second - first).toBeGreaterThanOrEqual(backoffMs - 15);
  expect(third - second).toBeGreaterThanOrEqual(2 * backoffMs - 15);
  // ...and not much later: the polling tick is 50 ms here.
  expect(second - first).toBeLessThan(backoffMs + 1000);
  expect(third - second).toBeLessThan(2 * backoffMs + 1000);
});

it('ends failed after maxRetries a task that always fails, keeping its last error in history', async () => {
  const { id } = await app.queue.addJob({
    task: 'flaky',
    payload: { failures: 99 },
    maxRetries: 1,
  });
  const job = await waitFor('the job to fail for good', async () => {
    const info = await app.queue.getJob(id);
    return info?.state === 'failed' && info;
  });
  expect(job).toMatchObject({ attempt: 2, maxRetries: 1, lastErrorMessage: 'attempt 2 failed' });
  expect(starts.get(id)).toHaveLength(2);
  const [queued] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs.jobs WHERE id = $1`,
    [id],
  );
  expect(queued.n).toBe(0);
});

it('caps the retry delay at maxRetryDelay, however many attempts failed before', async () => {
  // The 61st attempt: 2^60 * retryBackoff seconds would be past the end of time.
  const [{ id }] = await db.query<{ id: string }>(
    `INSERT INTO jobs.jobs (id, task, payload, retries, "maxRetries")
     VALUES (gen_random_uuid(), 'flaky', '{"failures": 999}', 60, 100) RETURNING id`,
  );
  await app.queue.addJob({ task: 'flaky', payload: { failures: 0 } }); // wakes the runner
  const job = await waitFor('the 61st attempt to fail and be queued again', async () => {
    const info = await app.queue.getJob(id);
    return info?.state === 'pending' && info.attempt === 61 && info;
  });
  expect(job.lastErrorMessage).toBe('attempt 61 failed');
  const delay = (job.waitUntil!.getTime() - Date.now()) / 1000;
  expect(delay).toBeGreaterThan(MAX_RETRY_DELAY - 30);
  expect(delay).toBeLessThanOrEqual(MAX_RETRY_DELAY);
});
