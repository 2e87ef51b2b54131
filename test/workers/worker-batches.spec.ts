import { JobCancelledError } from 'nestjs-pg-jobs';
import { JobRunner } from '../../libs/jobs/src/runner/job-runner.js';
import { collectReports, openGate } from '../fixtures/workers/report.js';
import type { WorkerReport } from '../fixtures/workers/report.js';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { startWorkerApp } from '../support/worker-fixtures.js';

/**
 * The jobs one claim brings back go to a thread together, in one batch, which the thread runs one
 * job at a time, in claim order. Here each instance has one thread and room for three jobs, and
 * each test adds its jobs in one statement, so that one claim takes them all and one thread holds
 * them at once: one running, the others waiting behind it in the thread.
 */
const db = useTestDatabase();
const channel = collectReports();
afterAll(() => channel.close());

const reportsOf = (id: string) => channel.reports.filter((report) => report.id === id);
const reported = (id: string, event: string) =>
  waitFor(
    `job ${id} to report ${event}`,
    () => reportsOf(id).find((r) => r.event === event),
    30_000,
  );
/** Where `report` comes among everything the threads reported. */
const at = (report: WorkerReport) => channel.reports.indexOf(report);

const ended = (id: string, state: string) =>
  waitFor(
    `job ${id} to be ${state}`,
    async () => {
      const row = await db.historyOf(id);
      return row?.state === state && row;
    },
    60_000,
  );

function startOneThreadApp(taskTimeout: number): Promise<JobsApp> {
  return startWorkerApp(db.url, { workers: 1, concurrency: 3, taskTimeout, retryBackoff: 0 });
}

describe('jobs that wait behind another in their thread', () => {
  let app: JobsApp;
  beforeAll(async () => {
    app = await startOneThreadApp(3);
  }, 60_000);
  afterAll(() => app.close());

  it('start one at a time, in claim order, each with its own signal and its timeout counted from its own start', async () => {
    const [slow, next, last] = await app.queue.addJobs([
      // Times out after 3 s: its signal aborts, and it ends.
      { task: 'worker.sleep', payload: { ms: 60_000 }, maxRetries: 0 },
      // Waits those 3 s in the thread, then sleeps 2 s: past its timeout counted from its claim,
      // within it counted from its start.
      { task: 'worker.sleep', payload: { ms: 2000 }, maxRetries: 0 },
      { task: 'worker.greet', payload: { name: 'last' }, maxRetries: 0 },
    ]);
    await ended(last.id, 'completed');

    expect(await db.historyOf(slow.id)).toMatchObject({ state: 'failed' });
    expect((await db.historyOf(slow.id))?.lastErrorMessage).toMatch(/timeout of 3s/);
    expect(await db.historyOf(next.id)).toMatchObject({ state: 'completed', attempt: 1 });

    const slowAborted = await reported(slow.id, 'aborted');
    const nextStarted = await reported(next.id, 'started');
    const nextFinished = await reported(next.id, 'finished');
    const lastGreeted = await reported(last.id, 'greeted');
    expect(at(slowAborted)).toBeLessThan(at(nextStarted));
    expect(at(nextFinished)).toBeLessThan(at(lastGreeted));
    expect(reportsOf(next.id).map((r) => r.event)).toEqual(['started', 'finished']);
    expect(new Set([slowAborted, nextStarted, lastGreeted].map((r) => r.threadId)).size).toBe(1);
  }, 60_000);
});

describe('a batch in one thread', () => {
  let app: JobsApp;
  let runner: JobRunner;
  beforeAll(async () => {
    app = await startOneThreadApp(60);
    runner = app.module.get(JobRunner);
  }, 60_000);
  afterAll(() => app.close());

  it('loses only the job a cancel names: the running one is aborted, a waiting one never starts', async () => {
    const [running, waiting, other] = await app.queue.addJobs([
      { task: 'worker.sleep', payload: { ms: 60_000 } },
      { task: 'worker.sleep', payload: { ms: 60_000 } },
      { task: 'worker.greet', payload: { name: 'other' }, promise: true },
    ]);
    await reported(running.id, 'started');

    expect(await app.queue.cancelJob(waiting.id)).toBe(true);
    await ended(waiting.id, 'cancelled');
    expect(await app.queue.cancelJob(running.id)).toBe(true);
    const aborted = await reported(running.id, 'aborted');
    expect(aborted.detail).toBe(new JobCancelledError(running.id).message);

    await other.promise;
    await reported(other.id, 'greeted');
    expect(reportsOf(waiting.id)).toEqual([]);
    expect(await db.historyOf(running.id)).toMatchObject({ state: 'cancelled', attempt: 1 });
    expect(await db.historyOf(waiting.id)).toMatchObject({ state: 'cancelled', attempt: 1 });
    await waitFor('every slot to be free', () => runner.activeCount === 0);
  }, 60_000);

  it("settles every job of a thread that dies: the running one fails, the waiting ones run on the thread's replacement, their attempts unspent", async () => {
    const [dies, ...waiting] = await app.queue.addJobs([
      { task: 'worker.die', payload: { how: 'exit' }, maxRetries: 0 },
      { task: 'worker.greet', payload: { name: 'after' }, maxRetries: 0, promise: true },
      { task: 'worker.greet', payload: { name: 'after' }, maxRetries: 0, promise: true },
    ]);
    await Promise.all(waiting.map((job) => job.promise));

    const died = await ended(dies.id, 'failed');
    expect(died.lastErrorMessage).toMatch(/exited with code 7/);
    const deadThread = (await reported(dies.id, 'started')).threadId;
    for (const { id } of waiting) {
      expect(await db.historyOf(id)).toMatchObject({ state: 'completed', attempt: 1 });
      expect((await reported(id, 'greeted')).threadId).not.toBe(deadThread);
    }
    await waitFor('every slot to be free', () => runner.activeCount === 0);
  }, 90_000);
});

describe('a pool of two threads', () => {
  let app: JobsApp;
  beforeAll(async () => {
    app = await startWorkerApp(db.url, { workers: 2, concurrency: 10, retryBackoff: 0 });
  }, 60_000);
  afterAll(() => app.close());

  it('moves a job waiting behind a long one to a thread that is idle', async () => {
    // Both threads booted and idle: the pool grows to its second thread on demand, and until that
    // one has booted the first runs both jobs of a pair.
    await waitFor(
      'a pair of jobs to run on two threads',
      async () => {
        const pair = await app.queue.addJobs(
          ['a', 'b'].map((name) => ({ task: 'worker.greet', payload: { name }, promise: true })),
        );
        await Promise.all(pair.map((job) => job.promise));
        const threads = await Promise.all(pair.map((job) => reported(job.id, 'greeted')));
        return new Set(threads.map((report) => report.threadId)).size === 2;
      },
      30_000,
    );

    // Shared between the two idle threads: the long one and the next in one batch, the last in
    // the other. The long one holds its thread until its gate opens, and the gate opens only once
    // the job behind it has run: on the other thread, or (the defect) never.
    const [long, behind, last] = await app.queue.addJobs([
      { task: 'worker.hold', promise: true },
      { task: 'worker.greet', payload: { name: 'behind' }, promise: true },
      { task: 'worker.greet', payload: { name: 'last' }, promise: true },
    ]);
    try {
      const longStarted = await reported(long.id, 'started');
      const behindGreeted = await reported(behind.id, 'greeted');
      expect(behindGreeted.threadId).not.toBe(longStarted.threadId);
    } finally {
      openGate(long.id);
    }
    await Promise.all([long, behind, last].map((job) => job.promise));
  }, 90_000);
});
