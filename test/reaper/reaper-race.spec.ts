import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { ReaperService } from 'nestjs-pg-jobs';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useCluster } from '../support/cluster.js';

const cluster = useCluster({
  options: { runJobs: false, allowUnknownTasks: true, instanceTimeout: 1, heartbeatInterval: 0.2 },
});
const { db } = cluster;
let apps: JobsApp[];

beforeAll(async () => {
  apps = await cluster.startApps(['race-a', 'race-b']);
});

/** Active attempts of an instance that never registered, started `secondsAgo` ago. */
async function strand(
  count: number,
  attempt: number,
  maxRetries: number,
  secondsAgo = 60,
): Promise<string[]> {
  const ids = Array.from({ length: count }, () => randomUUID());
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "executedBy", "createdAt", "startedAt")
     SELECT id, 'record', 'active', $2, $3, 'ghost', now(), now() - make_interval(secs => $4)
     FROM unnest($1::uuid[]) AS id`,
    [ids, attempt, maxRetries, secondsAgo],
  );
  return ids;
}

/**
 * Holds row locks on `ids` until the returned release is called, so that the reapers started
 * meanwhile all find the same candidates and then queue up on the same rows: a real race.
 */
async function holdRows(ids: string[], then: string): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: db.url });
  client.on('error', () => undefined);
  await client.connect();
  await client.query('BEGIN');
  await client.query('SELECT 1 FROM jobs."jobHistory" WHERE id = ANY($1::uuid[]) FOR UPDATE', [
    ids,
  ]);
  return {
    async release() {
      await client.query(then, [ids]);
      await client.query('COMMIT');
      await client.end();
    },
  };
}

async function reapersWaitingOnLocks(): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%WITH candidates%'`,
  );
  return row.n;
}

/**
 * Runs a reaper while another session holds the stranded rows and changes them with `change`, and
 * expects the reaper, once the rows are released, to requeue none: every job stays in `state`.
 */
async function expectReaperToLeaveAlone(ids: string[], change: string, state: string) {
  const lock = await holdRows(ids, change);
  const reaping = apps[0].module.get(ReaperService).reapStaleJobs();
  await waitFor(
    'the reaper to wait on the rows',
    async () => (await reapersWaitingOnLocks()) === 1,
  );
  await lock.release();

  expect(await reaping).toBe(0);
  expect(await db.query('SELECT id FROM jobs.jobs')).toEqual([]);
  const states = await db.query<{ state: string }>(`SELECT DISTINCT state FROM jobs."jobHistory"`);
  expect(states).toEqual([{ state }]);
  await db.query('DELETE FROM jobs."jobHistory"');
}

it('requeues each stranded job exactly once when two reapers race on it', async () => {
  const withRetries = await strand(30, 1, 3);
  const exhausted = await strand(10, 4, 3);
  const lock = await holdRows([...withRetries, ...exhausted], 'SELECT $1::uuid[]');
  const reaping = apps.flatMap((app) =>
    [1, 2].map(() => app.module.get(ReaperService).reapStaleJobs()),
  );
  await waitFor(
    'all four reaps to wait on the same rows',
    async () => (await reapersWaitingOnLocks()) === 4,
  );
  await lock.release();
  const requeued = await Promise.all(reaping);

  expect(requeued.reduce((sum, n) => sum + n, 0)).toBe(30);
  expect(requeued.filter((n) => n > 0)).toEqual([30]);
  const queued = await db.query<{ id: string; retries: number }>(
    'SELECT id, retries FROM jobs.jobs',
  );
  expect(queued.map((row) => row.id).sort()).toEqual([...withRetries].sort());
  expect(new Set(queued.map((row) => row.retries))).toEqual(new Set([1]));
  const states = await db.query<{ state: string; n: number }>(
    `SELECT state, count(*)::int AS n FROM jobs."jobHistory" GROUP BY state`,
  );
  // Out of attempts: ended interrupted, as in the seed, and not queued again.
  expect(states).toEqual([{ state: 'interrupted', n: 40 }]);
  await db.query('DELETE FROM jobs.jobs');
  await db.query('DELETE FROM jobs."jobHistory"');
});

it('leaves a job alone that completed while a reaper was waiting to requeue it', async () => {
  const ids = await strand(5, 1, 3);
  await expectReaperToLeaveAlone(
    ids,
    `UPDATE jobs."jobHistory" SET state = 'completed', "completedAt" = now() WHERE id = ANY($1::uuid[])`,
    'completed',
  );
});

it('leaves alone a job that snoozed and was claimed again by its instance while a reaper waited', async () => {
  const ids = await strand(5, 1, 3);
  // The snooze and the next claim, by the same instance: same attempt number, same instance, a
  // fresh start; only the claim's token tells the two claims apart.
  await expectReaperToLeaveAlone(
    ids,
    `UPDATE jobs."jobHistory" SET "claimToken" = coalesce("claimToken", 0) + 1, "startedAt" = now()
     WHERE id = ANY($1::uuid[])`,
    'active',
  );
});

it('leaves the jobs of a heartbeating instance, and young ones of an unknown instance, to run', async () => {
  // Far older than instanceTimeout, but race-b has heartbeated all along: its registration and an
  // attempt of it, both backdated by a minute.
  await db.query(
    `UPDATE jobs.instances SET "startedAt" = "startedAt" - interval '1 minute' WHERE id = 'race-b'`,
  );
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "executedBy", "createdAt", "startedAt")
     SELECT $1, 'record', 'active', 1, 3, id, now(), "startedAt" FROM jobs.instances WHERE id = 'race-b'`,
    [randomUUID()],
  );
  await strand(3, 1, 3, 0);
  expect(await apps[0].module.get(ReaperService).reapStaleJobs()).toBe(0);
  expect(await db.query(`SELECT 1 FROM jobs."jobHistory" WHERE state = 'active'`)).toHaveLength(4);
  await db.query('DELETE FROM jobs."jobHistory"');
});
