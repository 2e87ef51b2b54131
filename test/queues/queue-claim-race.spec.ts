import pg from 'pg';
import { runnerSql } from '../../libs/jobs/src/runner/runner.sql.js';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const { claimLimited, claimLimitedByGroup } = runnerSql(toSchemaName('jobs'));

/** Takes the queue's claim lock in a transaction of its own, until `release`. */
async function holdQueueLock(queue: string): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: db.url });
  client.on('error', () => undefined);
  await client.connect();
  await client.query('BEGIN');
  await client.query(
    `SELECT pg_advisory_xact_lock(hashtextextended('nestjs-pg-jobs:queue:jobs:' || $1, 0))`,
    [queue],
  );
  return {
    async release() {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

const claimsWaiting = async () =>
  (
    await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
    )
  )[0].n;

beforeAll(async () => {
  // Migrates the schema; runs nothing.
  const app = await startJobsApp(db.url, { options: { runJobs: false } });
  await app.close();
});
beforeEach(() => db.query('TRUNCATE jobs.jobs, jobs."jobHistory", jobs.queues'));

/**
 * Four claims of one queue, each asking for as much as the limit, wait together on the queue's
 * lock; released, they run one after another. Each was planned (and took its snapshot) before the
 * others committed: the load they count must still include every claim that went before.
 */
async function raceFourClaims(
  statement: typeof claimLimited,
  params: (claim: number) => Omit<Parameters<typeof claimLimited.values>[0], 'executedBy'>,
): Promise<number> {
  const lock = await holdQueueLock('limited');
  const clients = await Promise.all(
    [1, 2, 3, 4].map(async () => {
      const client = new pg.Client({ connectionString: db.url });
      client.on('error', () => undefined);
      await client.connect();
      return client;
    }),
  );
  try {
    const claims = clients.map((client, i) =>
      client.query<{ id: string | null }>(
        statement.text,
        statement.values({ ...params(i), executedBy: `claimer-${i}` }),
      ),
    );
    await waitFor(
      'the four claims to wait on the queue lock',
      async () => (await claimsWaiting()) === 4,
    );
    await lock.release();
    const results = await Promise.all(claims);
    return results.flatMap((result) => result.rows).filter((row) => row.id !== null).length;
  } finally {
    await Promise.all(clients.map((client) => client.end()));
  }
}

const enqueue = (n: number, groupKey: string | null = null, task = 'work') =>
  db.query(
    `INSERT INTO jobs.jobs (id, task, "maxRetries", queue, "groupKey")
     SELECT gen_random_uuid(), $3, 0, 'limited', $2 FROM generate_series(1, $1)`,
    [n, groupKey, task],
  );

it('claims no more than globalConcurrency across claims that waited on each other', async () => {
  await enqueue(40);
  const claimed = await raceFourClaims(claimLimited, () => ({
    limit: 5,
    tasks: ['work'],
    queue: 'limited',
    globalConcurrency: 5,
  }));
  expect(claimed).toBe(5);
});

it('starts no more than the rate limit across claims that waited on each other', async () => {
  await enqueue(40);
  const claimed = await raceFourClaims(claimLimited, () => ({
    limit: 5,
    tasks: ['work'],
    queue: 'limited',
    rateLimit: { limit: 7, periodSeconds: 60 },
  }));
  expect(claimed).toBe(7);
});

it('claims no more than groupConcurrency of a group across claims that waited on each other', async () => {
  // Each claimer runs a task of its own in the queue: their walks find different jobs of the group,
  // so only the counts can hold the group to its limit.
  for (let i = 0; i < 4; i++) await enqueue(5, 'tenant', `work${i}`);
  const claimed = await raceFourClaims(claimLimitedByGroup, (i) => ({
    limit: 5,
    tasks: [`work${i}`],
    queue: 'limited',
    groupConcurrency: 3,
  }));
  expect(claimed).toBe(3);
});
