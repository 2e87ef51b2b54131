import pg from 'pg';
import { startJobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const DEPENDENCIES = 9_999;
const ENDED = 3_000;

/**
 * Sequential scans of the flows' tables so far, flushed by the session itself. (Not the queue's:
 * this test's own statement takes the ended jobs out of it.)
 */
async function seqScans(client: pg.Client): Promise<Record<string, number>> {
  await client.query('SELECT pg_stat_force_next_flush()');
  await client.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await client.query<{ relname: string; n: number }>(
    `SELECT relname, seq_scan::int AS n FROM pg_stat_user_tables
     WHERE schemaname = 'jobs' AND relname IN ('jobFlowMember', 'jobDependency')`,
  );
  return Object.fromEntries(rows.map((row) => [row.relname, row.n]));
}

it("ends a flow's dependencies reading its tables by their keys, whatever their statistics", async () => {
  const app = await startJobsApp(db.url, { options: { runJobs: false, allowUnknownTasks: true } });
  const items = Array.from({ length: DEPENDENCIES }, (_, n) => ({ ref: `item-${n}`, task: 'x' }));
  const flow = await app.queue.addFlow({
    jobs: [...items, { ref: 'sink', task: 'x', dependsOn: items.map(({ ref }) => ref) }],
  });
  await app.close();
  const ids = items.map(({ ref }) => flow.jobs[ref]);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const before = await seqScans(client);
    // Ended as completions end them, fifty to a statement, each through the trigger. Before
    // autoanalyze has been by, "jobDependency" grows with the versions of its rows that the endings
    // write, and the planner's guess of a job's dependents with it: past about 2,000 endings,
    // migration 13's trigger joined "jobFlowMember" to them by scanning it whole.
    for (let offset = 0; offset < ENDED; offset += 50) {
      await client.query(
        `WITH done AS (DELETE FROM jobs.jobs WHERE id = ANY($1) RETURNING *)
         INSERT INTO jobs."jobHistory" (id, task, state, payload, priority, attempt, "maxRetries",
                                        "wasScheduled", awaited, "createdAt", "completedAt", queue,
                                        "inFlow")
         SELECT id, task, 'completed', payload, priority, 1, "maxRetries", "isScheduled", awaited,
                "createdAt", now(), queue, "inFlow"
         FROM done`,
        [ids.slice(offset, offset + 50)],
      );
    }
    expect(await seqScans(client)).toEqual(before);
    const [sink] = await db.query(`SELECT "blockedBy" FROM jobs.jobs WHERE id = $1`, [
      flow.jobs.sink,
    ]);
    expect(sink).toEqual({ blockedBy: DEPENDENCIES - ENDED });
  } finally {
    await client.end();
  }
}, 120_000);
