import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { notSettledWithin, withDeadline } from '../support/deadline.js';

const db = useTestDatabase();

/** Seconds a first run puts the job off by: long enough to start waiting before it runs again. */
const PUT_OFF = 2;

/** Snoozes, fails (retried after `PUT_OFF`) or fails for good on its first run; returns on the next. */
@JobTask({ name: 'twice', backoff: () => PUT_OFF })
@Injectable()
class TwiceTask implements JobTaskHandler<{ first: 'snooze' | 'fail' }, string> {
  private readonly seen = new Set<string>();

  run({ first }: { first: 'snooze' | 'fail' }, ctx: JobContext) {
    if (this.seen.has(ctx.id)) return 'second run';
    this.seen.add(ctx.id);
    if (first === 'snooze') return ctx.snooze(PUT_OFF);
    throw new Error('first run fails');
  }
}

/**
 * The waiter's own poll is an hour away: a waiter settles within the test only if the job's end is
 * notified, which it is only when its history row says it is awaited.
 */
let waiter: JobsApp;

beforeAll(async () => {
  waiter = await startJobsApp(db.url, {
    tasks: [TwiceTask],
    options: { runJobs: false, pollingCheck: 3600 },
  });
  // The instance that runs the jobs.
  await startJobsApp(db.url, { tasks: [TwiceTask], options: { pollingCheck: 0.1 } });
});

const stateOf = async (id: string) =>
  (await db.query<{ state: string }>(`SELECT state FROM jobs."jobHistory" WHERE id = $1`, [id]))[0]
    ?.state;

const queued = async (id: string) =>
  (await db.query(`SELECT 1 FROM jobs.jobs WHERE id = $1`, [id])).length === 1;

/** Resolves with `promise`'s value, or rejects once `ms` passed without it. */
const within = <T>(promise: Promise<T>, ms: number) =>
  withDeadline(promise, ms, notSettledWithin('the promise', ms));

it.each([
  ['snoozed', 'snooze', 'snoozed'],
  ['retried', 'fail', 'failed'],
] as const)(
  'tells the waiter of a job awaited while %s, by notification',
  async (_what, first, state) => {
    const { id } = await waiter.queue.addJob({ task: 'twice', payload: { first } });
    await waitFor(
      'the first run to put the job off',
      async () => (await stateOf(id)) === state && (await queued(id)),
    );
    const result = waiter.queue.waitForJob(id);
    await expect(within(result, 15_000)).resolves.toBe('second run');
  },
  30_000,
);

it('tells the waiter of a job awaited while requeued by retryJobs, by notification', async () => {
  const { id } = await waiter.queue.addJob({
    task: 'twice',
    payload: { first: 'fail' },
    maxRetries: 0,
  });
  await waitFor('the job to fail for good', async () => (await stateOf(id)) === 'failed');
  // Held in the queue until the waiter has marked it.
  await waiter.queue.pauseQueue('default');
  expect(await waiter.queue.retryJobs({ task: 'twice' })).toBe(1);
  const result = waiter.queue.waitForJob(id);
  await waitFor(
    'the mark on the queued job',
    async () =>
      (await db.query(`SELECT 1 FROM jobs.jobs WHERE id = $1 AND awaited`, [id])).length === 1,
  );
  await waiter.queue.resumeQueue('default');
  await expect(within(result, 15_000)).resolves.toBe('second run');
}, 30_000);
