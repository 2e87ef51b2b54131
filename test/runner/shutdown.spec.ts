import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const started = new Set<string>();
const finished = new Set<string>();
const aborted = new Set<string>();

@JobTask('sleep')
@Injectable()
class SleepTask implements JobTaskHandler<{ ms: number }> {
  async run(payload: { ms: number }, ctx: JobContext): Promise<void> {
    started.add(ctx.id);
    ctx.signal.addEventListener('abort', () => aborted.add(ctx.id));
    // Stops sleeping when aborted, so that no timer outlives the test.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, payload.ms);
      ctx.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()));
    });
    if (!ctx.signal.aborted) finished.add(ctx.id);
  }
}

it('lets a running job finish when it can within shutdownTimeout', async () => {
  const app = await startJobsApp(db.url, { tasks: [SleepTask], options: { shutdownTimeout: 5 } });
  const { id } = await app.queue.addJob({ task: 'sleep', payload: { ms: 300 } });
  await waitFor('the job to start', () => started.has(id));
  await app.close();
  expect(finished.has(id)).toBe(true);
  const [row] = await db.query(`SELECT state, attempt FROM jobs."jobHistory" WHERE id = $1`, [id]);
  expect(row).toEqual({ state: 'completed', attempt: 1 });
});

it('puts a job that outlasts shutdownTimeout back in the queue without consuming its attempt', async () => {
  const app = await startJobsApp(db.url, { tasks: [SleepTask], options: { shutdownTimeout: 0.2 } });
  const { id } = await app.queue.addJob({ task: 'sleep', payload: { ms: 5_000 } });
  await waitFor('the job to start', () => started.has(id));
  await app.close();
  expect(finished.has(id)).toBe(false);
  expect(aborted.has(id)).toBe(true);
  const [queued] = await db.query(`SELECT retries FROM jobs.jobs WHERE id = $1`, [id]);
  expect(queued).toEqual({ retries: 0 });
  const [history] = await db.query(`SELECT state FROM jobs."jobHistory" WHERE id = $1`, [id]);
  expect(history).toEqual({ state: 'interrupted' });

  // The next instance runs it as its first attempt again.
  const next = await startJobsApp(db.url, { tasks: [SleepTask], options: { pollingCheck: 0.1 } });
  try {
    await db.query(`UPDATE jobs.jobs SET payload = '{"ms": 1}' WHERE id = $1`, [id]);
    await waitFor(
      'the requeued job to complete',
      async () => (await next.queue.getJob(id))?.state === 'completed',
    );
    expect((await next.queue.getJob(id))?.attempt).toBe(1);
  } finally {
    await next.close();
  }
});
