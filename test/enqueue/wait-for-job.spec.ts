import { randomUUID } from 'node:crypto';
import pg from 'pg';
import {
  InvalidJobOptionsError,
  JobCancelledError,
  JobFailedError,
  JobNotFoundError,
  JobPromiseTimeoutError,
} from 'nestjs-pg-jobs';
import { useCluster } from '../support/cluster.js';
import { GatedTask, openGate, started } from '../support/gated-task.js';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';

const cluster = useCluster();
const { db } = cluster;
/** Runs the jobs. */
let a: JobsApp;
/** Only waits: it runs nothing, and its poll is too slow to matter, so only a NOTIFY reaches it. */
let b: JobsApp;

beforeAll(async () => {
  [a, b] = await Promise.all([
    cluster.startApp('wait-a', { tasks: [GatedTask], options: { pollingCheck: 0.2 } }),
    cluster.startEnqueuer('wait-b', { pollingCheck: 600 }),
  ]);
});

async function awaitedFlag(id: string): Promise<boolean | undefined> {
  const [row] = await db.query<{ awaited: boolean }>(
    `SELECT awaited FROM jobs.jobs WHERE id = $1
     UNION ALL
     SELECT awaited FROM jobs."jobHistory" h
     WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM jobs.jobs WHERE id = $1)`,
    [id],
  );
  return row?.awaited;
}

async function runningGated(payload: object = {}, maxRetries?: number): Promise<string> {
  const { id } = await a.queue.addJob({ task: 'gated', payload, maxRetries });
  await waitFor(`job ${id} to start`, () => started.has(id));
  return id;
}

it('resolves on B when a job enqueued and run on A (not awaited there) completes', async () => {
  const id = await runningGated();
  expect(await awaitedFlag(id)).toBe(false);
  const waiting = b.queue.waitForJob(id);
  // Once flagged, the job's end is notified: B's own poll would take ten minutes.
  await waitFor('the running job to be marked awaited', () => awaitedFlag(id));
  openGate(id);
  await expect(waiting).resolves.toBeUndefined();
  expect((await a.queue.getJob(id))?.state).toBe('completed');
});

it('marks a queued job, so that its cancellation on A reaches the waiter on B', async () => {
  const { id } = await a.queue.addJob({
    task: 'gated',
    waitUntil: new Date(Date.now() + 3600_000),
  });
  const waiting = b.queue.waitForJob(id);
  // The cancellation may reach B before cancelJob's own reply reaches A: handled from now on.
  waiting.catch(() => undefined);
  await waitFor('the queued job to be marked awaited', () => awaitedFlag(id));
  expect(await a.queue.cancelJob(id)).toBe(true);
  await expect(waiting).rejects.toThrow(JobCancelledError);
});

it('rejects on every waiter of both instances when the job fails for good', async () => {
  const id = await runningGated({ fail: 'out of paper' }, 0);
  const waiters = [a.queue.waitForJob(id), b.queue.waitForJob(id), b.queue.waitForJob(id)];
  for (const waiter of waiters) waiter.catch(() => undefined);
  await waitFor('the running job to be marked awaited', () => awaitedFlag(id));
  openGate(id);
  for (const waiter of waiters) {
    await expect(waiter).rejects.toThrow(JobFailedError);
    await expect(waiter).rejects.toThrow('out of paper');
  }
});

it('resolves with the result of a job run on A, running or ended already when B asks', async () => {
  const result = { pages: 3, url: 's3://reports/1.pdf' };
  const id = await runningGated({ result });
  const waiting = b.queue.waitForJob<typeof result>(id);
  await waitFor('the running job to be marked awaited', () => awaitedFlag(id));
  openGate(id);
  await expect(waiting).resolves.toEqual(result);
  await expect(b.queue.waitForJob(id)).resolves.toEqual(result);
});

describe('a job that has ended already settles the wait at once', () => {
  it('resolves for a completed job', async () => {
    const id = await runningGated();
    openGate(id);
    await waitFor(
      'the job to complete',
      async () => (await a.queue.getJob(id))?.state === 'completed',
    );
    await expect(b.queue.waitForJob(id)).resolves.toBeUndefined();
  });

  it('rejects with JobFailedError for a failed one, with its error', async () => {
    const { id } = await a.queue.addJob({
      task: 'gated',
      payload: { fail: 'jammed' },
      maxRetries: 0,
    });
    openGate(id);
    await waitFor('the job to fail', async () => (await a.queue.getJob(id))?.state === 'failed');
    const waiting = b.queue.waitForJob(id);
    await expect(waiting).rejects.toThrow(JobFailedError);
    await expect(waiting).rejects.toThrow('jammed');
  });

  it('rejects with JobCancelledError for a cancelled one', async () => {
    const { id } = await a.queue.addJob({
      task: 'gated',
      waitUntil: new Date(Date.now() + 3600_000),
    });
    await a.queue.cancelJob(id);
    await expect(b.queue.waitForJob(id)).rejects.toThrow(JobCancelledError);
  });
});

it('gives up after its timeout with JobPromiseTimeoutError, and the job goes on', async () => {
  const id = await runningGated();
  const waiting = b.queue.waitForJob(id, { timeout: 0.2 });
  await expect(waiting).rejects.toThrow(JobPromiseTimeoutError);
  await expect(waiting).rejects.toThrow(/within 0.2s \(the timeout of waitForJob\)/);
  expect((await a.queue.getJob(id))?.state).toBe('active');
  const again = b.queue.waitForJob(id);
  openGate(id);
  await expect(again).resolves.toBeUndefined();
});

it('wakes the instances when it flags a due job whose row a claim may have passed by, so that it starts at once', async () => {
  // Its poll comes after the test: only a notification makes it claim.
  const quiet = await cluster.startApp('wait-quiet', {
    tasks: [GatedTask],
    options: { pollingCheck: 60, schema: 'wait_quiet' },
  });
  const { id } = await quiet.queue.addJob({
    task: 'gated',
    waitUntil: new Date(Date.now() + 3600_000),
  });
  // A transaction that holds the job's row while the job falls due: a claim meanwhile passes it
  // by (SKIP LOCKED), as it passes by a row that waitForJob's own flag holds for a moment.
  const holder = new pg.Client({ connectionString: db.url });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(`UPDATE wait_quiet.jobs SET "waitUntil" = now() WHERE id = $1`, [id]);
    const waiting = quiet.queue.waitForJob(id, { timeout: 30 });
    await waitFor('waitForJob to wait for the row', async () => {
      const rows = await db.query(
        `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%markedQueued%'`,
      );
      return rows.length > 0;
    });
    await holder.query('COMMIT');
    await waitFor(`job ${id} to start`, () => started.has(id));
    openGate(id);
    await expect(waiting).resolves.toBeUndefined();
  } finally {
    await holder.end();
    await quiet.close();
  }
});

it('rejects with JobNotFoundError for an id no job has', async () => {
  const id = randomUUID();
  await expect(b.queue.waitForJob(id)).rejects.toThrow(JobNotFoundError);
  await expect(b.queue.waitForJob(id)).rejects.toThrow(`No job ${id}`);
});

it.each([
  ['a malformed id', 'not-a-uuid', undefined, /"id" must be a job id/],
  ['a zero timeout', randomUUID(), { timeout: 0 }, /"timeout" must be a positive number/],
  ['a timeout past what a timer holds', randomUUID(), { timeout: 30 * 86400 }, /at most/],
  ['an unknown option', randomUUID(), { timeot: 5 }, /"timeot" is not an option/],
])('throws InvalidJobOptionsError for %s', async (_what, id, options, message) => {
  const waiting = b.queue.waitForJob(id, options as never);
  await expect(waiting).rejects.toThrow(InvalidJobOptionsError);
  await expect(waiting).rejects.toThrow(message);
});
