import { randomUUID } from 'node:crypto';
import { JobCancelledError } from 'nestjs-pg-jobs';
import { JobRunner } from '../../libs/jobs/src/runner/job-runner.js';
import { collectReports } from '../fixtures/workers/report.js';
import { useCluster } from '../support/cluster.js';
import { abortReasons, GatedTask, openGate, settled, started } from '../support/gated-task.js';
import { quietLogger, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { THREAD_LOADER_EXEC_ARGV, WORKER_TASKS_MODULE } from '../support/worker-fixtures.js';

const cluster = useCluster();
const { db } = cluster;
/** Cancels: runs no jobs. */
let b: JobsApp;

const warnings: string[] = [];
const warn = quietLogger.warn;
quietLogger.warn = (message: unknown, context?: unknown) => {
  warnings.push(String(message));
  return warn(message, context);
};

beforeAll(async () => {
  b = await cluster.startEnqueuer('cancel-b');
});

async function queued(id: string): Promise<boolean> {
  return (await db.query('SELECT 1 FROM jobs.jobs WHERE id = $1', [id])).length > 0;
}

/** Starts a `gated` job on `app` (awaited there) and waits until its task runs. */
async function runGated(app: JobsApp, payload: object = {}) {
  const { id, promise } = await app.queue.addJob({ task: 'gated', payload, promise: true });
  promise!.catch(() => undefined);
  await waitFor(`job ${id} to start`, () => started.has(id));
  return { id, promise: promise! };
}

describe('an in-process task', () => {
  /** Runs the jobs; its poll is too slow to matter, so only a notification can reach it in time. */
  let a: JobsApp;
  let runner: JobRunner;
  beforeAll(async () => {
    a = await cluster.startApp('cancel-a', {
      tasks: [GatedTask],
      options: { pollingCheck: 600, concurrency: 1 },
    });
    runner = a.module.get(JobRunner);
  });

  it.each([
    ['completes', {}],
    ['throws', { fail: 'gave up on the abort' }],
  ])(
    'is aborted within a second when another instance cancels it, and stays cancelled however it then ends (%s)',
    async (_ends, payload) => {
      const { id, promise } = await runGated(a, payload);
      const cancelledAt = Date.now();
      expect(await b.queue.cancelJob(id)).toBe(true);
      await waitFor('the signal to abort', () => abortReasons.has(id));
      expect(Date.now() - cancelledAt).toBeLessThan(1000);
      expect(abortReasons.get(id)).toBeInstanceOf(JobCancelledError);
      expect((abortReasons.get(id) as Error).message).toBe(`Job ${id} was cancelled.`);
      await expect(promise).rejects.toThrow(JobCancelledError);

      await waitFor(
        'the task to settle and free its slot',
        () => settled.has(id) && runner.activeCount === 0,
      );
      expect(await db.historyOf(id)).toMatchObject({
        state: 'cancelled',
        attempt: 1,
        executedBy: 'cancel-a',
      });
      expect(await queued(id)).toBe(false);
      // The cancel wrote the attempt's ending: the runner tried no write of its own, not even a fenced one.
      expect(
        warnings.filter((line) => line.includes(id) && line.includes('no longer the active')),
      ).toEqual([]);
    },
  );

  it('keeps the slot of a task that ignores its signal until the task settles', async () => {
    const { id, promise } = await runGated(a, { ignoreSignal: true });
    expect(await b.queue.cancelJob(id)).toBe(true);
    await expect(promise).rejects.toThrow(JobCancelledError);
    await waitFor('the runner to say the task runs on', () =>
      warnings.some((line) => line.includes(id) && line.includes('ignores ctx.signal')),
    );
    expect(await db.historyOf(id)).toMatchObject({ state: 'cancelled', attempt: 1 });
    expect(runner.activeCount).toBe(1);

    const next = await a.queue.addJob({ task: 'gated', promise: true });
    openGate(next.id);
    openGate(id);
    await next.promise;
    expect(runner.activeCount).toBe(0);
    expect(await db.historyOf(id)).toMatchObject({ state: 'cancelled', attempt: 1 });
  });

  it('is aborted once LISTEN is back when the cancel came while its session was terminated', async () => {
    const { id, promise } = await runGated(a);
    const [terminated] = await db.query<{ n: number }>(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND application_name LIKE '%cancel-a:listen'`,
    );
    expect(terminated.n).toBe(1);
    expect(await b.queue.cancelJob(id)).toBe(true);
    await expect(promise).rejects.toThrow(JobCancelledError);
    await waitFor('the signal to abort', () => abortReasons.has(id), 5000);
    expect(abortReasons.get(id)).toBeInstanceOf(JobCancelledError);
  });

  it('answers false for a job that ended or never was, and leaves it as it was', async () => {
    const { id, promise } = await runGated(a);
    openGate(id);
    await promise;
    expect(await b.queue.cancelJob(id)).toBe(false);
    expect(await db.historyOf(id)).toMatchObject({ state: 'completed' });
    expect(await b.queue.cancelJob(randomUUID())).toBe(false);
  });

  afterAll(() => a.close());
});

it('an attempt whose cancel notification was lost is aborted on its poll', async () => {
  const polled = await cluster.startApp('cancel-polled', {
    tasks: [GatedTask],
    options: { pollingCheck: 0.2 },
  });
  const { id, promise } = await runGated(polled);
  // What cancelJob writes, without the notifications it sends.
  await db.query(
    `UPDATE jobs."jobHistory" SET state = 'cancelled', "completedAt" = now()
     WHERE id = $1 AND state = 'active'`,
    [id],
  );
  await waitFor('the signal to abort', () => abortReasons.has(id), 5000);
  expect(abortReasons.get(id)).toBeInstanceOf(JobCancelledError);
  await waitFor('the task to settle', () => settled.has(id));
  expect(await db.historyOf(id)).toMatchObject({ state: 'cancelled', attempt: 1 });
  // Nothing told this instance's own waiter: its poll asks the database, as for any ending.
  await expect(promise).rejects.toThrow(JobCancelledError);
  await polled.close();
});

describe('a worker task', () => {
  let w: JobsApp;
  const { reports, close } = collectReports();
  const reported = (id: string, event: string) =>
    reports.find((report) => report.id === id && report.event === event);
  beforeAll(async () => {
    w = await cluster.startApp('cancel-w', {
      options: {
        workerModule: WORKER_TASKS_MODULE,
        workerExecArgv: THREAD_LOADER_EXEC_ARGV,
        workers: 1,
        workerTimeoutGrace: 0.5,
        pollingCheck: 600,
      },
    });
  }, 60_000);
  afterAll(async () => {
    await w.close();
    close();
  });

  it('has its signal aborted inside its thread, with a JobCancelledError', async () => {
    const { id, promise } = await w.queue.addJob({
      task: 'worker.sleep',
      payload: { ms: 60_000 },
      promise: true,
    });
    await waitFor('the task to start in its thread', () => reported(id, 'started'), 30_000);
    expect(await b.queue.cancelJob(id)).toBe(true);
    await expect(promise).rejects.toThrow(JobCancelledError);
    const aborted = await waitFor('the thread to report the abort', () => reported(id, 'aborted'));
    expect(aborted.detail).toBe(`Job ${id} was cancelled.`);
    expect(await db.historyOf(id)).toMatchObject({ state: 'cancelled', attempt: 1 });
  }, 60_000);

  it('is terminated with its thread after workerTimeoutGrace when it ignores the signal', async () => {
    const { id } = await w.queue.addJob({ task: 'worker.die', payload: { how: 'spin' } });
    const spinning = await waitFor('the task to spin', () => reported(id, 'started'), 30_000);
    expect(await b.queue.cancelJob(id)).toBe(true);
    // One thread: the next task runs once the spinning one is terminated and replaced.
    const { id: next, promise } = await w.queue.addJob({
      task: 'worker.greet',
      payload: { name: 'next' },
      promise: true,
    });
    await promise;
    expect(reported(next, 'greeted')!.threadId).not.toBe(spinning.threadId);
    expect(await db.historyOf(id)).toMatchObject({ state: 'cancelled', attempt: 1 });
    expect(await queued(id)).toBe(false);
  }, 60_000);
});
