import type { SchemaName } from '../database/schema-name.js';

/**
 * The admin API's statements. Every value is a parameter; the schema is the only identifier.
 *
 * A job is in exactly one place: pending in `jobs` (with, after a failed attempt, a `failed` row in
 * `jobHistory` that describes that attempt), else in `jobHistory`. Lists of history states skip
 * jobs that are queued again, so a job waiting for a retry is listed as pending, never as failed.
 */
export function adminSql({ quoted: s }: SchemaName) {
  const pendingColumns = `
    j.id, j.task, 'pending' AS state, j.payload, j.priority, j.retries AS attempt, j."maxRetries",
    j."waitUntil", j."createdAt", h."startedAt", h."completedAt", h."lastErrorMessage", h."executedBy",
    j."createdAt" AS "sortAt"`;
  const historyColumns = `
    h.id, h.task, h.state, h.payload, h.priority, h.attempt, h."maxRetries",
    NULL::timestamptz AS "waitUntil", h."createdAt", h."startedAt", h."completedAt",
    h."lastErrorMessage", h."executedBy", COALESCE(h."completedAt", h."startedAt", h."createdAt") AS "sortAt"`;
  const notQueued = `NOT EXISTS (SELECT 1 FROM ${s}.jobs q WHERE q.id = h.id)`;

  return {
    /** In claim order. $1 task (or null) $2 limit $3 offset */
    listPending: `
      SELECT ${pendingColumns}
      FROM ${s}.jobs j LEFT JOIN ${s}."jobHistory" h ON h.id = j.id
      WHERE ($1::text IS NULL OR j.task = $1)
      ORDER BY j.priority DESC, j."waitUntil", j.seq
      LIMIT $2 OFFSET $3`,

    /** Latest first. $1 state $2 task (or null) $3 limit $4 offset */
    listHistory: `
      SELECT ${historyColumns}
      FROM ${s}."jobHistory" h
      WHERE h.state = $1 AND ($2::text IS NULL OR h.task = $2) AND ${notQueued}
      ORDER BY "sortAt" DESC, h.id
      LIMIT $3 OFFSET $4`,

    /** Every job, latest activity first. $1 task (or null) $2 limit $3 offset */
    listAll: `
      SELECT * FROM (
        SELECT ${pendingColumns}
        FROM ${s}.jobs j LEFT JOIN ${s}."jobHistory" h ON h.id = j.id
        WHERE ($1::text IS NULL OR j.task = $1)
        UNION ALL
        SELECT ${historyColumns}
        FROM ${s}."jobHistory" h
        WHERE ($1::text IS NULL OR h.task = $1) AND ${notQueued}
      ) AS listed
      ORDER BY "sortAt" DESC, id
      LIMIT $2 OFFSET $3`,

    /** The history row of a job (its last attempt), whatever its state. $1 id */
    history: `SELECT * FROM ${s}."jobHistory" WHERE id = $1`,

    /**
     * Queues a job that failed for good once more, due now. The attempt counter goes on from the
     * last attempt (it is the fencing token of every write that ends an attempt, so it must never
     * repeat), and `maxRetries` is set so that this is one attempt with no automatic retry: an
     * operator's retry is a single, watched try. The row lock and `ON CONFLICT` make two
     * simultaneous retries queue it once.
     *
     * $1 id $2 createdBy $3 channel $4 notification
     */
    retry: `
      WITH target AS (
        SELECT * FROM ${s}."jobHistory" h
        WHERE h.id = $1 AND h.state IN ('failed', 'interrupted') AND ${notQueued}
        FOR UPDATE
      ), requeued AS (
        INSERT INTO ${s}.jobs (id, task, payload, priority, retries, "maxRetries", "isScheduled",
                               "createdBy", "createdAt")
        SELECT id, task, payload, priority, attempt, attempt, "wasScheduled", $2, "createdAt"
        FROM target
        ON CONFLICT (id) DO NOTHING
        RETURNING id
      ), woken AS (
        SELECT pg_notify($3, $4) FROM requeued
      )
      SELECT id, (SELECT count(*) FROM woken) AS woken FROM requeued`,

    /** Per task: queued, due, running and ended counts, and how long the longest-waiting due job has waited. */
    stats: `
      WITH queued AS (
        SELECT task, count(*)::int AS pending,
               count(*) FILTER (WHERE "waitUntil" <= now())::int AS due,
               extract(epoch FROM now() - min("waitUntil") FILTER (WHERE "waitUntil" <= now()))::float8
                 AS "oldestPendingAgeSeconds"
        FROM ${s}.jobs GROUP BY task
      ), recorded AS (
        SELECT h.task,
               count(*) FILTER (WHERE h.state = 'active')::int AS active,
               count(*) FILTER (WHERE h.state = 'completed')::int AS completed,
               count(*) FILTER (WHERE h.state = 'failed' AND q.id IS NULL)::int AS failed,
               count(*) FILTER (WHERE h.state = 'interrupted' AND q.id IS NULL)::int AS interrupted,
               count(*) FILTER (WHERE h.state = 'cancelled')::int AS cancelled,
               count(*) FILTER (WHERE h.state = 'skipped')::int AS skipped
        FROM ${s}."jobHistory" h LEFT JOIN ${s}.jobs q ON q.id = h.id
        GROUP BY h.task
      )
      SELECT COALESCE(q.task, r.task) AS task,
             COALESCE(q.pending, 0) AS pending, COALESCE(q.due, 0) AS due,
             COALESCE(r.active, 0) AS active, COALESCE(r.completed, 0) AS completed,
             COALESCE(r.failed, 0) AS failed, COALESCE(r.interrupted, 0) AS interrupted,
             COALESCE(r.cancelled, 0) AS cancelled, COALESCE(r.skipped, 0) AS skipped,
             q."oldestPendingAgeSeconds"
      FROM queued q FULL JOIN recorded r ON r.task = q.task
      ORDER BY 1`,

    /** Jobs that ended per minute over the last $1 minutes, every minute present (oldest first). */
    throughput: `
      SELECT m.minute,
             count(h.id) FILTER (WHERE h.state = 'completed')::int AS completed,
             count(h.id) FILTER (WHERE h.state = 'failed')::int AS failed
      FROM generate_series(date_trunc('minute', now()) - make_interval(mins => $1 - 1),
                           date_trunc('minute', now()), interval '1 minute') AS m(minute)
      LEFT JOIN ${s}."jobHistory" h
        ON h."completedAt" >= m.minute AND h."completedAt" < m.minute + interval '1 minute'
      GROUP BY m.minute
      ORDER BY m.minute`,
  };
}

export type AdminSql = ReturnType<typeof adminSql>;
