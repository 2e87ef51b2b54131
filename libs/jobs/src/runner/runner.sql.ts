import { preparedStatement } from '../database/prepared-statement.js';
import type { SchemaName } from '../database/schema-name.js';

/** A claimed job, as the runner holds it while the attempt runs. */
export interface ClaimedJob {
  readonly id: string;
  readonly task: string;
  readonly payload: unknown;
  readonly priority: number;
  /** The attempt this claim started: the fencing token of every write that ends it. */
  readonly attempt: number;
  readonly maxRetries: number;
}

/**
 * The runner's statements. Each is one round trip, and every write that ends an attempt is fenced
 * by `(id, attempt, state = 'active')`: a write for an attempt that is no longer the job's current,
 * active one (a reaper requeued it, shutdown released it) matches nothing and changes nothing.
 */
export function runnerSql({ quoted: s }: SchemaName) {
  /**
   * Ends the active attempts `selection` picks (a FROM/WHERE over history as h) as interrupted and
   * queues their jobs again with the attempt unconsumed, created by the instance that gave them
   * back. `reason` is the parameter of the message history keeps.
   */
  const giveBack = (selection: string, reason: string) => `
      WITH released AS (
        UPDATE ${s}."jobHistory" h
        SET state = 'interrupted', "lastErrorMessage" = ${reason}, "updatedAt" = now()
        ${selection}
        RETURNING h.*
      )
      INSERT INTO ${s}.jobs (id, task, payload, priority, retries, "maxRetries", "isScheduled", awaited,
                             "createdBy", "createdAt")
      SELECT id, task, payload, priority, attempt - 1, "maxRetries", "wasScheduled", awaited,
             "executedBy", "createdAt"
      FROM released
      RETURNING id`;
  const notifyEnd = (row: string) =>
    `pg_notify($2, json_build_object('event', 'jobCompleted', 'id', ${row}.id, 'state', ${row}.state,
                                     'error', left(${row}."lastErrorMessage", 2000))::text)`;
  return {
    /**
     * Claims up to $1 due jobs of the tasks $3 and records them active, atomically: one statement
     * is one transaction, so a claim that fails leaves no history row saying the job started, and
     * `SKIP LOCKED` lets instances claim side by side without waiting on each other.
     *
     * $1 limit $2 executedBy $3 task[]
     */
    claim: preparedStatement(`
      WITH claimed AS (
        -- = ANY(ARRAY(...)), not IN (...): the planner turns IN into a hash join over a sequential
        -- scan of the whole queue; the array is computed once. It holds the rows' ctids, not their
        -- ids: the delete then goes straight to each row instead of down the primary key. A ctid
        -- is stable here: the rows are locked from the moment it is read, and nothing updates jobs.
        DELETE FROM ${s}.jobs
        WHERE ctid = ANY(ARRAY(
          SELECT ctid FROM ${s}.jobs
          -- The task filter is wrapped in CASE so that the planner cannot estimate it: a plain
          -- task = ANY(...) on a table whose statistics predate the burst being claimed (or that
          -- was never analysed) is estimated at a handful of rows, and the planner then sorts the
          -- whole queue instead of walking jobs_claim_order, for every claim. Opaque, it is taken
          -- as matching half the rows, and the index walk that stops at $1 rows always wins.
          WHERE "waitUntil" <= now() AND CASE WHEN task = ANY($3::text[]) THEN true END
          ORDER BY priority DESC, "waitUntil", seq
          LIMIT $1
          FOR UPDATE SKIP LOCKED
        ))
        RETURNING *
      ), started AS (
        INSERT INTO ${s}."jobHistory" AS h (id, task, state, payload, priority, attempt, "maxRetries",
                                             "wasScheduled", awaited, "executedBy", "createdAt", "startedAt")
        SELECT id, task, 'active', payload, priority, retries + 1, "maxRetries", "isScheduled", awaited,
               $2, "createdAt", now()
        FROM claimed
        ON CONFLICT (id) DO UPDATE SET
          state = 'active', attempt = EXCLUDED.attempt, "maxRetries" = EXCLUDED."maxRetries",
          "executedBy" = EXCLUDED."executedBy", "startedAt" = now(), "completedAt" = NULL,
          "updatedAt" = now()
      )
      SELECT id, task, payload, priority, retries + 1 AS attempt, "maxRetries"
      FROM claimed
      ORDER BY priority DESC, "waitUntil", seq`),

    /**
     * Records a batch of successful attempts in one statement (one commit for many jobs: commits,
     * not statements, are what a busy queue waits on). Returns the ids that were still active; the
     * others were fenced out.
     *
     * $1 id[] $2 channel $3 attempt[]
     */
    complete: preparedStatement(`
      WITH done AS (
        UPDATE ${s}."jobHistory" h
        SET state = 'completed', "completedAt" = now(), "updatedAt" = now()
        FROM unnest($1::uuid[], $3::int[]) AS c(id, attempt)
        WHERE h.id = c.id AND h.attempt = c.attempt AND h.state = 'active'
        RETURNING h.id, h.state, h."lastErrorMessage", h.awaited
      )
      SELECT id, (SELECT count(*) FROM (SELECT ${notifyEnd('done')} FROM done WHERE awaited) n) AS told
      FROM done`),

    /**
     * Records a failed attempt and, while retries remain, puts the job back with its backoff:
     * `2^(attempt-1) * $5` seconds, at most $7. The exponent is capped before the power is taken:
     * with many retries the power alone overflows, and the failure could not be written at all.
     * Only the final failure is worth telling a waiting caller.
     *
     * $1 id $2 channel $3 attempt $4 error message $5 retryBackoff $6 requeuedBy $7 maxRetryDelay
     */
    fail: preparedStatement(`
      WITH failed AS (
        UPDATE ${s}."jobHistory"
        SET state = 'failed', "lastErrorMessage" = $4, "completedAt" = now(), "updatedAt" = now()
        WHERE id = $1 AND attempt = $3 AND state = 'active'
        RETURNING *
      ), retried AS (
        INSERT INTO ${s}.jobs (id, task, payload, priority, "waitUntil", retries, "maxRetries",
                               "isScheduled", awaited, "createdBy", "createdAt")
        SELECT id, task, payload, priority,
               now() + make_interval(secs => LEAST(power(2, LEAST(attempt - 1, 60)) * $5, $7)),
               attempt, "maxRetries", "wasScheduled", awaited, $6, "createdAt"
        FROM failed WHERE attempt <= "maxRetries"
        RETURNING id
      )
      SELECT id, (SELECT count(*) FROM retried) > 0 AS retried,
             (SELECT count(*) FROM (SELECT ${notifyEnd('failed')} FROM failed
                                    WHERE awaited AND NOT EXISTS (SELECT 1 FROM retried)) n) AS told
      FROM failed`),

    /**
     * Gives attempts back unconsumed (shutdown): each job is due again at once, with the retries it
     * had, and its history no longer says it is active.
     *
     * $1 id[] $2 attempt[] $3 reason
     */
    release: giveBack(
      `FROM unnest($1::uuid[], $2::int[]) AS r(id, attempt)
       WHERE h.id = r.id AND h.attempt = r.attempt AND h.state = 'active'`,
      '$3',
    ),

    /**
     * Gives back, unconsumed, this instance's active attempts of its current life that it is not
     * running ($2, $3): those of a claim that committed but whose reply never arrived. Earlier
     * lives' attempts are the reaper's (they ran, so they count as attempts).
     *
     * $1 executedBy $2 running id[] $3 running attempt[] $4 reason
     */
    requeueOrphans: giveBack(
      `WHERE h.state = 'active' AND h."executedBy" = $1
         AND h."startedAt" >= (SELECT "startedAt" FROM ${s}.instances WHERE id = $1)
         AND NOT EXISTS (SELECT 1 FROM unnest($2::uuid[], $3::int[]) AS r(id, attempt)
                         WHERE r.id = h.id AND r.attempt = h.attempt)`,
      '$4',
    ),
  };
}

export type RunnerSql = ReturnType<typeof runnerSql>;
