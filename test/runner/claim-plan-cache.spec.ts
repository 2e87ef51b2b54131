import pg from 'pg';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { runnerSql } from '../../libs/jobs/src/runner/runner.sql.js';
import { startJobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const QUEUED = 20_000;
const CLAIMS = 8;
const sql = runnerSql(toSchemaName('jobs'));

it('keeps one plan for the claim after its first runs on a connection, however long the queue, instead of planning every claim', async () => {
  const producer = await startJobsApp(db.url, {
    options: { runJobs: false, allowUnknownTasks: true },
  });
  for (let i = 0; i < QUEUED; i += 1000)
    await producer.queue.addJobs(Array.from({ length: 1000 }, () => ({ task: 'record' })));
  await producer.close();
  await db.query('ANALYZE jobs.jobs');

  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const { name, text } = sql.claim;
    for (let i = 0; i < CLAIMS; i++) {
      // As the runner claims: the same prepared statement, a limit that changes with its free slots.
      const values = sql.claim.values({
        limit: 1 + (i % 3),
        executedBy: 'plan-cache-test',
        tasks: ['record'],
        queues: ['default'],
      });
      const { rows } = await client.query({ name, text, values });
      expect(rows).toHaveLength(1 + (i % 3));
    }
    const [plans] = (
      await client.query<{ generic: number; custom: number }>(
        `SELECT generic_plans::int AS generic, custom_plans::int AS custom
         FROM pg_prepared_statements WHERE name = $1`,
        [name],
      )
    ).rows;
    // PostgreSQL plans the first five runs with their parameters, then keeps a generic plan unless
    // it estimates it dearer than theirs: with the limit a parameter, it guessed a tenth of the
    // queue for the generic plan against the few rows of each run's, and planned every claim.
    expect(plans).toEqual({ custom: 5, generic: CLAIMS - 5 });
  } finally {
    await client.end();
  }
}, 60_000);
