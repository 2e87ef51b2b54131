import { JobCancelledError, JobPromiseTimeoutError } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { executions, recording } from '../support/recorder.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let producer: JobsApp;
beforeAll(async () => {
  producer = await startJobsApp(db.url, {
    ...recording('producer'),
    options: { runJobs: false, promiseTimeout: 0.3, allowUnknownTasks: true },
  });
});
afterAll(() => producer?.close());

it('reports a pending job with its due time, priority and payload', async () => {
  const waitUntil = new Date(Date.now() + 60_000);
  const { id } = await producer.queue.addJob({
    task: 'record',
    payload: { to: 'x' },
    priority: 3,
    waitUntil,
  });
  expect(await producer.queue.getJob(id)).toMatchObject({
    id,
    task: 'record',
    state: 'pending',
    payload: { to: 'x' },
    priority: 3,
    attempt: 0,
    waitUntil,
    startedAt: null,
    lastErrorMessage: null,
  });
});

it('stores each job of a batch with its own options, whether the batch shares them or not', async () => {
  const later = new Date(Date.now() + 60_000);
  const mixed = await producer.queue.addJobs([
    { task: 'record', priority: 1, maxRetries: 0, isScheduled: true, payload: { n: 1 } },
    { task: 'other', priority: 2, maxRetries: 7, waitUntil: later, payload: { n: 2 } },
    { task: 'record', priority: 1, maxRetries: 0, uniqueKey: 'mixed:3', payload: { n: 3 } },
  ]);
  const shared = await producer.queue.addJobs([
    { task: 'other', priority: 4, maxRetries: 2, waitUntil: later },
    { task: 'other', priority: 4, maxRetries: 2, waitUntil: later },
  ]);
  const rows = await db.query<Record<string, unknown>>(
    `SELECT id, task, priority, "maxRetries", "isScheduled", "uniqueKey", payload,
            "waitUntil" > now() AS later
     FROM jobs.jobs WHERE id = ANY($1::uuid[]) ORDER BY seq`,
    [[...mixed, ...shared].map((job) => job.id)],
  );
  expect(rows.map((row) => row.id)).toEqual([...mixed, ...shared].map((job) => job.id));
  // task, priority, maxRetries, isScheduled, uniqueKey, payload, due later
  expect(
    rows.map((row) => [
      row.task,
      row.priority,
      row.maxRetries,
      row.isScheduled,
      row.uniqueKey,
      row.payload,
      row.later,
    ]),
  ).toEqual([
    ['record', 1, 0, true, null, { n: 1 }, false],
    ['other', 2, 7, false, null, { n: 2 }, true],
    ['record', 1, 0, false, 'mixed:3', { n: 3 }, false],
    ['other', 4, 2, false, null, {}, true],
    ['other', 4, 2, false, null, {}, true],
  ]);
});

it('answers null for a job that does not exist', async () => {
  expect(await producer.queue.getJob('00000000-0000-4000-8000-000000000000')).toBeNull();
});

it('cancels a pending job, rejecting its promise, so that it never runs', async () => {
  const { id, promise } = await producer.queue.addJob({ task: 'record', promise: true });
  expect(await producer.queue.cancelJob(id)).toBe(true);
  await expect(promise).rejects.toThrow(JobCancelledError);
  expect((await producer.queue.getJob(id))?.state).toBe('cancelled');
  expect(await producer.queue.cancelJob(id)).toBe(false);

  const runner = await startJobsApp(db.url, {
    ...recording('runner'),
    options: { pollingCheck: 0.1 },
  });
  try {
    // A job queued after the cancelled one runs: the cancelled one, had it been queued, would have run first.
    const later = await producer.queue.addJob({ task: 'record' });
    await waitFor('the later job to run', () => executions.some((e) => e.id === later.id));
    expect(executions.some((e) => e.id === id)).toBe(false);
  } finally {
    await runner.close();
  }
});

it('rejects a promise nobody answers within promiseTimeout, and forgets it', async () => {
  const { id, promise } = await producer.queue.addJob({ task: 'record', promise: true });
  await expect(promise).rejects.toThrow(JobPromiseTimeoutError);
  await expect(promise).rejects.toThrow(`job ${id} within 0.3s`);
  // The job itself is untouched: it is still there to run.
  expect((await producer.queue.getJob(id))?.state).toBe('pending');
  await producer.queue.cancelJob(id);
});

it('keeps one pending job per unique key and hands back its id', async () => {
  const first = await producer.queue.addJob({ task: 'record', uniqueKey: 'report:7' });
  const again = await producer.queue.addJob({ task: 'record', uniqueKey: 'report:7' });
  const batch = await producer.queue.addJobs([
    { task: 'record', uniqueKey: 'report:7' },
    { task: 'record', uniqueKey: 'report:8' },
    { task: 'record', uniqueKey: 'report:8' },
  ]);
  expect(first.deduplicated).toBe(false);
  expect(again).toEqual({ id: first.id, deduplicated: true });
  expect(batch[0]).toEqual({ id: first.id, deduplicated: true });
  expect(batch[1].deduplicated).toBe(false);
  expect(batch[2]).toEqual({ id: batch[1].id, deduplicated: true });
  const rows = await db.query(
    `SELECT "uniqueKey" FROM jobs.jobs WHERE "uniqueKey" IS NOT NULL ORDER BY 1`,
  );
  expect(rows).toEqual([{ uniqueKey: 'report:7' }, { uniqueKey: 'report:8' }]);
});
