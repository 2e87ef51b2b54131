import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { useCluster } from '../support/cluster.js';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';

// Nothing runs jobs here: the test moves them between the queue and history itself, in the window
// between the snapshot of a waitForJob or cancelJob statement and its write.
const cluster = useCluster();
const { db } = cluster;
let app: JobsApp;

beforeAll(async () => {
  app = await cluster.startEnqueuer('races', { pollingCheck: 0.2 });
});

/**
 * Holds the lock of a row until `release` runs `then` (with the job id as $1) and commits, so that a
 * statement started meanwhile takes its snapshot with the row where it was and then waits on it.
 */
async function holdRow(table: string, id: string) {
  const client = new pg.Client({ connectionString: db.url });
  client.on('error', () => undefined);
  await client.connect();
  await client.query('BEGIN');
  await client.query(`SELECT 1 FROM ${table} WHERE id = $1 FOR UPDATE`, [id]);
  return {
    async release(...then: string[]) {
      for (const statement of then) await client.query(statement, [id]);
      await client.query('COMMIT');
      await client.end();
    },
  };
}

/** `marker`: words from the statement's first kilobyte, all that pg_stat_activity keeps of it. */
const waitingOnLock = (marker: string) =>
  waitFor(`a statement (${marker}) to wait on the held row`, async () => {
    const rows = await db.query(
      `SELECT 1 FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`,
      [`%${marker}%`],
    );
    return rows.length === 1;
  });

/** What a claim does to a queued job: out of the queue, its attempt 1 active. */
const CLAIM = [
  `DELETE FROM jobs.jobs WHERE id = $1`,
  `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "executedBy", "createdAt", "startedAt")
   VALUES ($1, 'nobody', 'active', 1, 3, 'ghost', now(), now())`,
];

/** What a failed attempt with retries left does: history failed, the job queued again. */
const FAIL_AND_REQUEUE = [
  `UPDATE jobs."jobHistory" SET state = 'failed', "completedAt" = now() WHERE id = $1`,
  `INSERT INTO jobs.jobs (id, task, retries, "maxRetries") VALUES ($1, 'nobody', 1, 3)`,
];

async function queuedJob(): Promise<string> {
  return (await app.queue.addJob({ task: 'nobody' })).id;
}

it('waitForJob flags the running attempt of a job claimed while it flagged the queued row', async () => {
  const id = await queuedJob();
  const lock = await holdRow('jobs.jobs', id);
  const waiting = app.queue.waitForJob(id);
  await waitingOnLock('markedQueued');
  await lock.release(...CLAIM);
  // It looked again: the job's end is now notified to whoever waits.
  await waitFor(
    'the active attempt to be flagged awaited',
    async () => (await db.historyOf(id))?.awaited,
  );
  await db.query(
    `UPDATE jobs."jobHistory" SET state = 'completed', "completedAt" = now() WHERE id = $1`,
    [id],
  );
  await expect(waiting).resolves.toBeUndefined();
});

it('cancelJob cancels the running attempt of a job claimed while it took it out of the queue', async () => {
  const id = await queuedJob();
  const lock = await holdRow('jobs.jobs', id);
  const cancelling = app.queue.cancelJob(id);
  await waitingOnLock('SELECT id, state FROM');
  await lock.release(...CLAIM);
  expect(await cancelling).toBe(true);
  expect(await db.historyOf(id)).toMatchObject({ state: 'cancelled', attempt: 1 });
});

it('cancelJob takes out of the queue a job requeued while it ended its running attempt', async () => {
  const id = randomUUID();
  await db.query(CLAIM[1], [id]);
  const lock = await holdRow('jobs."jobHistory"', id);
  const cancelling = app.queue.cancelJob(id);
  await waitingOnLock('SELECT id, state FROM');
  await lock.release(...FAIL_AND_REQUEUE);
  expect(await cancelling).toBe(true);
  expect(await db.historyOf(id)).toMatchObject({ state: 'cancelled', attempt: 1 });
  expect(await db.query('SELECT 1 FROM jobs.jobs WHERE id = $1', [id])).toEqual([]);
});
