import type { JobsModuleOptions } from 'nestjs-pg-jobs';
import { JobRunner } from '../../libs/jobs/src/runner/job-runner.js';
import { collectReports, openGate } from '../fixtures/workers/report.js';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { startWorkerApp } from '../support/worker-fixtures.js';

/**
 * A worker job's answer leaves its thread before the thread starts the next job of its batch, so a
 * job that ended is recorded as it ended whatever the job after it does, and nothing kills a thread
 * over a job that has ended. Most tests hand the one thread a batch (one claim: one thread, room for
 * three jobs) of a job that returns at once followed by a CPU-bound spin that never yields, whose
 * run just before on that thread was instant: the thread used to hold back the first job's answer
 * for the spin, whose task had been short there.
 */
const db = useTestDatabase();
const channel = collectReports();
afterAll(() => channel.close());

/** How long the spin holds its thread: past the 1 s timeout of `worker.instant` plus the grace. */
const SPIN_MS = 3000;

const OPTIONS: Partial<JobsModuleOptions> = {
  workers: 1,
  concurrency: 3,
  // The spin's own timeout, far past its run; `worker.instant` has its own, of 1 s.
  taskTimeout: 30,
  workerTimeoutGrace: 0.5,
  // The last test shuts the instance down during a spin: it gives up waiting for it after 1 s.
  shutdownTimeout: 1,
  retryBackoff: 0,
};

const reported = (id: string, event: string) =>
  waitFor(
    `job ${id} to report ${event}`,
    () => channel.reports.find((r) => r.id === id && r.event === event),
    30_000,
  );

const ended = (id: string) =>
  waitFor(
    `job ${id} to end`,
    async () => {
      const row = await db.historyOf(id);
      return row && row.state !== 'active' && row;
    },
    30_000,
  );

/** Boots an instance and runs a few instant spins on its one thread, as its earlier jobs. */
async function startSpinningApp(): Promise<JobsApp> {
  const app = await startWorkerApp(db.url, OPTIONS);
  for (let i = 0; i < 3; i++) {
    await app.queue
      .addJob({ task: 'worker.spin', payload: { ms: 0 }, promise: true })
      .then((job) => job.promise);
  }
  return app;
}

/**
 * Adds, in one claim, an instant spin, then `first`, then a long spin; resolves once the long
 * spin holds the thread, `first` having ended before it.
 */
async function spinAfter(app: JobsApp, first: { task: string; payload: unknown }) {
  const [, finished, spin] = await app.queue.addJobs([
    { task: 'worker.spin', payload: { ms: 0 }, maxRetries: 0 },
    { ...first, maxRetries: 0 },
    { task: 'worker.spin', payload: { ms: SPIN_MS }, maxRetries: 0 },
  ]);
  const spinning = await reported(spin.id, 'started');
  return { finished, spin, spinning };
}

// One instance for the file (a thread's boot is slow under load); the last test shuts it down.
let app: JobsApp;
beforeAll(async () => {
  app = await startSpinningApp();
}, 60_000);
afterAll(() => app.close());

describe('a job that ends before a CPU-bound job of its batch', () => {
  it('is recorded completed although the spin after it holds the thread past its timeout', async () => {
    const { finished, spin } = await spinAfter(app, { task: 'worker.instant', payload: {} });

    expect(await ended(finished.id)).toMatchObject({ state: 'completed', attempt: 1 });
    await ended(spin.id);
  }, 60_000);

  it('does not get the spin after it killed before its own timeout', async () => {
    const { spin, spinning } = await spinAfter(app, { task: 'worker.instant', payload: {} });

    expect(await ended(spin.id)).toMatchObject({ state: 'completed', attempt: 1 });
    expect((await reported(spin.id, 'finished')).threadId).toBe(spinning.threadId);
  }, 60_000);

  it('does not get its thread killed by a cancelJob of it', async () => {
    // Under the module's 30 s timeout: only the cancel could stop the thread here.
    const { finished, spin, spinning } = await spinAfter(app, {
      task: 'worker.greet',
      payload: { name: 'done' },
    });
    await app.queue.cancelJob(finished.id);

    expect(await ended(spin.id)).toMatchObject({ state: 'completed', attempt: 1 });
    expect((await reported(spin.id, 'finished')).threadId).toBe(spinning.threadId);
    // The cancel's write may come before the completion's, which it then fences out.
    expect(['completed', 'cancelled']).toContain((await ended(finished.id)).state);
  }, 60_000);
});

describe('a timeout that comes due after its job ended in the thread', () => {
  it('does not fail the job while the main thread is too busy to hear its answer', async () => {
    const [gated, instant] = await app.queue.addJobs([
      { task: 'worker.progress', payload: { first: 1, last: {} }, maxRetries: 0 },
      { task: 'worker.instant', payload: {}, maxRetries: 0 },
    ]);
    await waitFor(
      'the gated job to run',
      async () => (await app.queue.getJob(gated.id))?.progress === 1,
      30_000,
    );
    // The thread runs the instant job while this thread is blocked, well past that job's 1 s
    // timeout: once unblocked, its timer fires before its answer's message is read.
    openGate(gated.id);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2500);

    expect(await ended(instant.id)).toMatchObject({ state: 'completed', attempt: 1 });
    expect(await ended(gated.id)).toMatchObject({ state: 'completed', attempt: 1 });
  }, 60_000);
});

describe('a job that ends in its thread after an abort', () => {
  it('does not get its thread killed while the main thread is too busy to hear its answer', async () => {
    const { id } = await app.queue.addJob({ task: 'worker.sleep', payload: { ms: 60_000 } });
    const sleeping = await reported(id, 'started');
    const [{ claimToken }] = await db.query<{ claimToken: string }>(
      `SELECT "claimToken" FROM jobs."jobHistory" WHERE id = $1`,
      [id],
    );
    // From the check phase of a turn, so that the next turn's timers come before its messages.
    await new Promise((resolve) => setImmediate(resolve));
    app.module.get(JobRunner).cancel(id, claimToken);
    // The attempt gives up on the abort, and its workerTimeoutGrace (0.5 s) starts.
    for (let i = 0; i < 10; i++) await Promise.resolve();
    // The thread ends the job on its signal and answers while this thread is blocked past the grace.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);

    const next = await app.queue.addJob({
      task: 'worker.greet',
      payload: { name: 'next' },
      promise: true,
    });
    await next.promise;
    expect((await reported(id, 'aborted')).threadId).toBe(sleeping.threadId);
    expect((await reported(next.id, 'greeted')).threadId).toBe(sleeping.threadId);
  }, 60_000);
});

// Last: it shuts the file's instance down.
describe('a job that ended before a CPU-bound job of its batch, at shutdown', () => {
  it('is recorded completed when the instance shuts down during the spin', async () => {
    const { finished, spin } = await spinAfter(app, {
      task: 'worker.greet',
      payload: { name: 'done' },
    });
    await app.close();

    expect(await db.historyOf(finished.id)).toMatchObject({ state: 'completed', attempt: 1 });
    expect(await db.historyOf(spin.id)).toMatchObject({ state: 'interrupted', attempt: 1 });
  }, 60_000);
});
