import { collectReports } from '../fixtures/workers/report.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { startWorkerApp } from '../support/worker-fixtures.js';

const db = useTestDatabase();
const channel = collectReports();
afterAll(() => channel.close());

/** `workerTimeoutGrace` far past the tests' deadlines: shutdown must not wait for it. */
const boot = (shutdownTimeout: number) =>
  startWorkerApp(db.url, { workers: 1, shutdownTimeout, workerTimeoutGrace: 120 });

const started = (id: string) =>
  waitFor(
    'the worker task to start',
    () => channel.reports.some((r) => r.id === id && r.event === 'started'),
    30_000,
  );

/** Back in the queue with its attempt unconsumed, as the core's shutdown leaves a job; then removed. */
async function expectRequeued(id: string) {
  expect(await db.historyOf(id)).toMatchObject({ state: 'interrupted', attempt: 1 });
  const [queued] = await db.query(`SELECT retries FROM jobs.jobs WHERE id = $1`, [id]);
  expect(queued).toEqual({ retries: 0 });
  await db.query(`DELETE FROM jobs.jobs WHERE id = $1`, [id]);
}

it('lets a running worker job finish when it can within shutdownTimeout', async () => {
  const app = await boot(10);
  const { id } = await app.queue.addJob({ task: 'worker.sleep', payload: { ms: 300 } });
  await started(id);
  await app.close();
  expect(await db.historyOf(id)).toMatchObject({ state: 'completed', attempt: 1 });
}, 45_000);

it('requeues a worker job that outlasts shutdownTimeout, without consuming its attempt', async () => {
  const app = await boot(0.3);
  const { id } = await app.queue.addJob({ task: 'worker.sleep', payload: { ms: 60_000 } });
  await started(id);
  await app.close();
  expect(channel.reports.some((r) => r.id === id && r.event === 'finished')).toBe(false);
  await expectRequeued(id);
}, 45_000);

it('shuts down without waiting on a worker thread that ignores its signal, and requeues its job', async () => {
  const app = await boot(0.3);
  const { id } = await app.queue.addJob({ task: 'worker.die', payload: { how: 'spin' } });
  await started(id);
  // The thread never yields: only terminating it lets close() return before this test's deadline.
  await app.close();
  await expectRequeued(id);
}, 45_000);
