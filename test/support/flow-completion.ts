import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { runnerSql } from '../../libs/jobs/src/runner/runner.sql.js';
import type { TestDatabase } from './test-database.js';

const sql = runnerSql(toSchemaName('jobs'));

/**
 * Completes the queued flow jobs `ids` in one batch, as one instance's runner would: each claimed
 * (moved from the queue to its first attempt, active), then all recorded by the runner's own
 * `completeInFlow` statement. Returns that statement's rows: each recorded id, with whether it
 * told a waiter (`told`) and woke the instances for a released dependent (`woke`).
 */
export async function completeFlowJobs(db: TestDatabase, ids: readonly string[]) {
  await db.query(
    `WITH claimed AS (DELETE FROM jobs.jobs WHERE id = ANY($1::uuid[]) RETURNING *)
     INSERT INTO jobs."jobHistory" (id, task, state, payload, priority, attempt, "maxRetries",
                                    "wasScheduled", awaited, "createdAt", "startedAt", queue,
                                    "inFlow", "claimToken")
     SELECT id, task, 'active', payload, priority, 1, "maxRetries", "isScheduled", awaited,
            "createdAt", now(), queue, "inFlow", 1
     FROM claimed`,
    [ids],
  );
  const completions = ids.map((id) => ({ job: { id, attempt: 1, claim: '1' }, result: null }));
  return db.query<{ id: string; told: string; woke: string }>(
    sql.completeInFlow.text,
    sql.completeInFlow.values({ completions, channel: 'jobs_scheduler' }),
  );
}
