import pg from 'pg';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { runnerSql } from '../../libs/jobs/src/runner/runner.sql.js';
import { startJobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const DEPENDENCIES = 9_999;
const COMPLETED = 1_500;
const FAILED = 1_500;
const BATCH = 50;
const sql = runnerSql(toSchemaName('jobs'));

/**
 * What the flows' tables and the queue have seen so far, flushed by the session itself: sequential
 * scans of the flows' tables (not the queue's: this test's own statements take the ended jobs out of
 * it) and row updates of the queue.
 */
async function tableStats(client: pg.Client) {
  await client.query('SELECT pg_stat_force_next_flush()');
  await client.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await client.query<{ relname: string; scans: number; updates: number }>(
    `SELECT relname, seq_scan::int AS scans, n_tup_upd::int AS updates FROM pg_stat_user_tables
     WHERE schemaname = 'jobs' AND relname IN ('jobFlowMember', 'jobDependency', 'jobs')`,
  );
  const of = (name: string) => rows.find((row) => row.relname === name)!;
  return {
    seqScans: {
      jobFlowMember: of('jobFlowMember').scans,
      jobDependency: of('jobDependency').scans,
    },
    queueUpdates: of('jobs').updates,
  };
}

/** Takes `ids` out of the queue into history as running attempts, claim token = position + 1. */
async function claim(client: pg.Client, ids: string[]): Promise<void> {
  await client.query(
    `WITH claimed AS (DELETE FROM jobs.jobs WHERE id = ANY($1) RETURNING *)
     INSERT INTO jobs."jobHistory" (id, task, state, payload, priority, attempt, "maxRetries",
                                    "wasScheduled", awaited, "createdAt", "startedAt", queue,
                                    "inFlow", "claimToken")
     SELECT id, task, 'active', payload, priority, 1, "maxRetries", "isScheduled", awaited,
            "createdAt", now(), queue, "inFlow", array_position($1, id)
     FROM claimed`,
    [ids],
  );
}

it("counts a flow's endings against their dependent reading its tables by their keys, whatever their statistics, and writes it once per batch of completions", async () => {
  const app = await startJobsApp(db.url, { options: { runJobs: false, allowUnknownTasks: true } });
  const items = Array.from({ length: DEPENDENCIES }, (_, n) => ({ ref: `item-${n}`, task: 'x' }));
  const flow = await app.queue.addFlow({
    jobs: [
      ...items,
      {
        ref: 'sink',
        task: 'x',
        dependsOn: items.map(({ ref }) => ref),
        onDependencyFailure: 'run',
      },
    ],
  });
  await app.close();
  const ids = items.map(({ ref }) => flow.jobs[ref]);
  const completed = ids.slice(0, COMPLETED);
  const failed = ids.slice(COMPLETED, COMPLETED + FAILED);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    await claim(client, completed);
    const before = await tableStats(client);
    // Completed as the runner completes them, fifty to a statement. Before autoanalyze has been by,
    // "jobDependency" grows with the versions of its rows that the endings write, and the planner's
    // guess of a job's dependents with it: past about 2,000 endings, an ending that joined
    // "jobFlowMember" to them scanned it whole.
    for (let offset = 0; offset < COMPLETED; offset += BATCH) {
      const completions = completed.slice(offset, offset + BATCH).map((id, i) => ({
        job: { id, attempt: 1, claim: String(offset + i + 1), inFlow: true },
        result: null,
      }));
      const { rows } = await client.query(
        sql.completeInFlow.text,
        sql.completeInFlow.values({ completions, channel: 'jobs_scheduler' }),
      );
      expect(rows).toHaveLength(completions.length);
    }
    // Failed as a final failure ends them, each through the flowJobEnded trigger.
    for (let offset = 0; offset < FAILED; offset += BATCH) {
      await client.query(
        `WITH done AS (DELETE FROM jobs.jobs WHERE id = ANY($1) RETURNING *)
         INSERT INTO jobs."jobHistory" (id, task, state, payload, priority, attempt, "maxRetries",
                                        "wasScheduled", awaited, "createdAt", "completedAt", queue,
                                        "inFlow")
         SELECT id, task, 'failed', payload, priority, 1, "maxRetries", "isScheduled", awaited,
                "createdAt", now(), queue, "inFlow"
         FROM done`,
        [failed.slice(offset, offset + BATCH)],
      );
    }
    const after = await tableStats(client);
    expect(after.seqScans).toEqual(before.seqScans);
    // One write of the sink per statement of completions, one per failure.
    expect(after.queueUpdates - before.queueUpdates).toBe(COMPLETED / BATCH + FAILED);
    const [sink] = await db.query(`SELECT "blockedBy" FROM jobs.jobs WHERE id = $1`, [
      flow.jobs.sink,
    ]);
    expect(sink).toEqual({ blockedBy: DEPENDENCIES - COMPLETED - FAILED });
  } finally {
    await client.end();
  }
}, 120_000);
