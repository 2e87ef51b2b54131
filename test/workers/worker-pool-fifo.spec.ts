import { createHook } from 'node:async_hooks';
import { collectReports } from '../fixtures/workers/report.js';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { startWorkerApp } from '../support/worker-fixtures.js';

const db = useTestDatabase();
const channel = collectReports();
let app: JobsApp;

// One thread, and room in the runner for every job: all but one job wait in the pool, so the
// pool's waiting queue alone decides which job starts next. One thread's reports cross the
// channel in the order it sent them, which is the order it started the tasks.
beforeAll(async () => {
  app = await startWorkerApp(db.url, { workers: 1, concurrency: 100, retryBackoff: 0 });
}, 60_000);

afterAll(async () => {
  await app?.close();
  channel.close();
});

/** The submission index of each of `ids`, in the order the thread started them. */
const startOrder = (ids: readonly string[]) =>
  channel.reports
    .filter((r) => r.event === 'started' && ids.includes(r.id))
    .map((r) => ids.indexOf(r.id));
const inOrder = (ids: readonly string[]) => ids.map((_id, index) => index);

const spin = (ms: number) => ({ task: 'worker.spin', payload: { ms }, promise: true as const });

it('starts waiting worker tasks in the order they were claimed, arrivals never overtaking', async () => {
  // A backlog first, then jobs that arrive one at a time while it drains: each arrival finds
  // earlier calls waiting, and must queue behind them even when it lands just as the thread frees.
  const backlog = await app.queue.addJobs(Array.from({ length: 20 }, () => spin(2)));
  const arrivals = [];
  for (let i = 0; i < 40; i++) arrivals.push(await app.queue.addJob(spin(2)));
  const jobs = [...backlog, ...arrivals];
  await Promise.all(jobs.map((job) => job.promise));

  const ids = jobs.map((job) => job.id);
  await waitFor('every start report', () => startOrder(ids).length === ids.length);
  expect(startOrder(ids)).toEqual(inOrder(ids));
}, 60_000);

it('starts the waiting tasks in order on the thread that replaces a dead one', async () => {
  const dies = await app.queue.addJob({
    task: 'worker.die',
    payload: { how: 'exit' },
    maxRetries: 0,
  });
  const waiting = await app.queue.addJobs(Array.from({ length: 10 }, () => spin(2)));
  await Promise.all(waiting.map((job) => job.promise));

  const ids = waiting.map((job) => job.id);
  await waitFor('every start report', () => startOrder(ids).length === ids.length);
  expect(startOrder(ids)).toEqual(inOrder(ids));
  const died = await waitFor("the dead thread's job to fail", async () => {
    const job = await app.queue.getJob(dies.id);
    return job?.state === 'failed' && job;
  });
  expect(died.lastErrorMessage).toMatch(/exit/i);
  const threads = new Set(
    channel.reports.filter((r) => ids.includes(r.id)).map((report) => report.threadId),
  );
  const dyingThread = channel.reports.find((r) => r.id === dies.id)?.threadId;
  expect(threads.size).toBe(1);
  expect(threads.has(dyingThread ?? -1)).toBe(false);
}, 60_000);

it('lets waiting calls sleep while every thread is busy, not re-check on a timer', async () => {
  const busy = await app.queue.addJob({
    task: 'worker.sleep',
    payload: { ms: 3000 },
    promise: true,
  });
  await waitFor('the thread to be busy', () =>
    channel.reports.some((r) => r.id === busy.id && r.event === 'started'),
  );
  const waiting = await app.queue.addJobs(Array.from({ length: 50 }, () => spin(1)));
  const last = waiting.at(-1)!.id;
  await waitFor('the calls to wait in the pool', async () => {
    return (await app.queue.getJob(last))?.state === 'active';
  });

  let timers = 0;
  const hook = createHook({
    init: (_id, type) => {
      if (type === 'Timeout') timers++;
    },
  }).enable();
  await new Promise((resolve) => setTimeout(resolve, 500));
  hook.disable();
  // The instance's own work arms some dozens (its ticks, and a pool idle timer per statement:
  // 73 on a busy CI machine); a re-check per waiting call every 150 ms or less arms more than 150.
  expect(timers).toBeLessThan(3 * waiting.length);

  await Promise.all([busy.promise, ...waiting.map((job) => job.promise)]);
}, 60_000);
