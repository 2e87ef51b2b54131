import { threadId } from 'node:worker_threads';
import { collectReports } from '../fixtures/workers/report.js';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { startWorkerApp } from '../support/worker-fixtures.js';

const db = useTestDatabase();
const channel = collectReports();
let app: JobsApp;

beforeAll(async () => {
  app = await startWorkerApp(db.url, { workers: 2, retryBackoff: 0, taskTimeout: 2 });
}, 60_000);

afterAll(async () => {
  await app?.close();
  channel.close();
});

it('runs a worker task in a pool thread, with the providers its module injects', async () => {
  const { id, promise } = await app.queue.addJob({
    task: 'worker.greet',
    payload: { name: 'thread' },
    promise: true,
  });
  await promise;
  const report = await waitFor('the greeting', () => channel.reports.find((r) => r.id === id));
  expect(report.detail).toBe('hello thread');
  expect(report.threadId).not.toBe(threadId);
  expect((await app.queue.getJob(id))?.state).toBe('completed');
}, 30_000);

it('records the message of an error a worker task throws', async () => {
  const { id } = await app.queue.addJob({
    task: 'worker.fail',
    payload: { message: 'no such invoice 42' },
    maxRetries: 0,
  });
  const job = await waitFor('the job to fail', async () => {
    const info = await app.queue.getJob(id);
    return info?.state === 'failed' && info;
  });
  expect(job.lastErrorMessage).toContain('no such invoice 42');
}, 30_000);

it('aborts ctx.signal inside the thread at taskTimeout, with the timeout as its reason', async () => {
  const { id } = await app.queue.addJob({
    task: 'worker.sleep',
    payload: { ms: 30_000 },
    maxRetries: 0,
  });
  const job = await waitFor(
    'the job to time out',
    async () => {
      const info = await app.queue.getJob(id);
      return info?.state === 'failed' && info;
    },
    20_000,
  );
  expect(job.lastErrorMessage).toMatch(/did not finish within its timeout of 2s/);
  const aborted = await waitFor('the abort report', () =>
    channel.reports.find((r) => r.id === id && r.event === 'aborted'),
  );
  expect(aborted.detail).toMatch(/timeout of 2s/);
}, 30_000);

it('runs CPU-heavy worker tasks in parallel, one per thread', async () => {
  const spin = async (count: number) => {
    const startedAt = performance.now();
    const added = await app.queue.addJobs(
      Array.from({ length: count }, () => ({
        task: 'worker.spin',
        payload: { ms: 200 },
        promise: true,
      })),
    );
    await Promise.all(added.map((job) => job.promise));
    return { ms: performance.now() - startedAt, ids: added.map((job) => job.id) };
  };
  const threadsOf = (ids: readonly string[]) =>
    new Set(
      channel.reports
        .filter((r) => ids.includes(r.id) && r.event === 'finished')
        .map((r) => r.threadId),
    );
  const one = await spin(1);
  // The pool grows to its second thread on demand, and it stays while busy. A job handed to it
  // while it boots is taken back by the first thread once that one is free: until the second
  // thread has booted, the first runs both.
  await waitFor(
    'a pair of jobs to run on two threads',
    async () => {
      const pair = await spin(2);
      return threadsOf(pair.ids).size === 2;
    },
    30_000,
  );
  const four = await spin(4);

  expect(threadsOf(four.ids).size).toBe(2);
  // Back to back, four jobs take four times one job; on two threads about twice.
  expect(four.ms).toBeLessThan(one.ms * 4 * 0.8);
}, 60_000);
