import { preparedStatement } from '../database/prepared-statement.js';
import type { SchemaName } from '../database/schema-name.js';

/**
 * The queue's statements (enqueue, look-up, cancel), built once per schema. Every value is a
 * parameter; the schema is the only identifier and is validated before it gets here.
 */
export function queueSql({ quoted: s }: SchemaName) {
  /**
   * Inserts a batch (one row per array element) and, when $11 is true and something is due now,
   * notifies in the same statement: inside a caller's transaction the notification is then
   * delivered on commit and dropped on rollback, with no extra round trip. It returns the ids of the
   * keyed jobs that did go in: with `onKeyConflict` a job whose unique key is already pending is
   * skipped, and the caller looks that pending job up; a job without a key always goes in, or the
   * statement fails.
   *
   * A NOT NULL column whose value every job shares ($2, $4, $6, $7, $9, $14) may arrive as a
   * one-element array: unnest pads it with NULLs, which its one element fills.
   *
   * $1 id[] $2 task[] $3 payload[] $4 priority[] $5 waitUntil[] $6 maxRetries[] $7 isScheduled[]
   * $8 uniqueKey[] $9 awaited[] $10 createdBy $11 notify $12 channel $13 notification $14 queue[]
   * $15 groupKey[]
   */
  const insertJobs = (onKeyConflict: string) =>
    preparedStatement(`
      WITH input AS (
        SELECT * FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::int[], $5::timestamptz[],
                             $6::int[], $7::bool[], $8::text[], $9::bool[], $14::text[], $15::text[])
          WITH ORDINALITY AS t(id, task, payload, priority, "waitUntil", "maxRetries", "isScheduled",
                               "uniqueKey", awaited, queue, "groupKey", position)
      ), inserted AS (
        INSERT INTO ${s}.jobs (id, task, payload, priority, "waitUntil", "maxRetries", "isScheduled",
                               "uniqueKey", awaited, "createdBy", queue, "groupKey")
        SELECT id, coalesce(task, $2[1]), payload, coalesce(priority, $4[1]), coalesce("waitUntil", now()),
               coalesce("maxRetries", $6[1]), coalesce("isScheduled", $7[1]), "uniqueKey",
               coalesce(awaited, $9[1]), $10, coalesce(queue, $14[1]), "groupKey"
        FROM input ORDER BY position
        ${onKeyConflict}
        RETURNING id, "waitUntil", "uniqueKey"
      ), woken AS (
        SELECT pg_notify($12, $13) WHERE $11 AND EXISTS (SELECT 1 FROM inserted WHERE "waitUntil" <= now())
      )
      SELECT ARRAY(SELECT id FROM inserted WHERE "uniqueKey" IS NOT NULL) AS "keyedIds",
             (SELECT count(*) FROM woken) AS notified`);

  return {
    /** A batch without unique keys: no conflict to resolve, so no speculative insertion to pay for. */
    insertJobs: insertJobs(''),
    /** A batch with unique keys: a key already pending skips its job. */
    insertKeyedJobs: insertJobs(
      'ON CONFLICT ("uniqueKey") WHERE "uniqueKey" IS NOT NULL DO NOTHING',
    ),

    pendingByUniqueKey: `SELECT id, "uniqueKey" FROM ${s}.jobs WHERE "uniqueKey" = ANY($1::text[])`,

    /** A pending job (with the history of its earlier attempts, if any), else its history. */
    getJob: preparedStatement(`
      SELECT j.id, j.task, 'pending' AS state, j.payload, j.priority, j.retries AS attempt,
             j."maxRetries", j."waitUntil", j."createdAt", h."startedAt", h."completedAt",
             h."lastErrorMessage", h."executedBy", j.queue, j."groupKey"
      FROM ${s}.jobs j LEFT JOIN ${s}."jobHistory" h ON h.id = j.id
      WHERE j.id = $1
      UNION ALL
      SELECT h.id, h.task, h.state, h.payload, h.priority, h.attempt, h."maxRetries", NULL,
             h."createdAt", h."startedAt", h."completedAt", h."lastErrorMessage", h."executedBy",
             h.queue, h."groupKey"
      FROM ${s}."jobHistory" h
      WHERE h.id = $1 AND NOT EXISTS (SELECT 1 FROM ${s}.jobs WHERE id = $1)`),

    /** Takes a pending job out of the queue and records it cancelled, in one statement. */
    cancelJob: `
      WITH removed AS (
        DELETE FROM ${s}.jobs WHERE id = $1 RETURNING *
      ), recorded AS (
        INSERT INTO ${s}."jobHistory" AS h (id, task, state, payload, priority, attempt, "maxRetries",
                                             "wasScheduled", awaited, "createdAt", "completedAt", queue,
                                             "groupKey")
        SELECT id, task, 'cancelled', payload, priority, retries, "maxRetries", "isScheduled", awaited,
               "createdAt", now(), queue, "groupKey"
        FROM removed
        ON CONFLICT (id) DO UPDATE SET state = 'cancelled', "completedAt" = now(), "updatedAt" = now()
        RETURNING id, task, awaited, queue
      ), told AS (
        SELECT pg_notify($2, json_build_object('event', 'jobCompleted', 'id', id, 'state', 'cancelled')::text)
        FROM recorded WHERE awaited
      )
      SELECT id, task, queue, (SELECT count(*) FROM told) AS told FROM recorded`,

    /** The awaited jobs among $1 that have ended for good: what a missed notification would have said. */
    endedJobs: `
      SELECT h.id, h.state, h."lastErrorMessage" AS error
      FROM ${s}."jobHistory" h
      WHERE h.id = ANY($1::uuid[]) AND h.state <> 'active'
        AND NOT EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.id = h.id)`,
  };
}

export type QueueSql = ReturnType<typeof queueSql>;
