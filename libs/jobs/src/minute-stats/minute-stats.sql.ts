import type { SchemaName } from '../database/schema-name.js';
import { sqlStatement } from '../database/sql-statement.js';
import { durationBucketSql } from './duration-buckets.js';

/**
 * Seconds after a minute's end before it is written: an ending stamped in the minute (its
 * statement's `now()`) may commit a moment after the minute ended. One committed later still is
 * not counted in the minute's row.
 */
export const MINUTE_CLOSE_GRACE_SECONDS = 5;

/** What `writeMinute` writes: a minute, and the queues' depth sampled at its end. */
export interface MinuteToWrite {
  readonly minute: Date;
  readonly writtenBy: string;
  readonly queues: readonly {
    name: string;
    pending: number;
    blocked: number;
    due: number;
    active: number;
  }[];
  /** Seconds the rows are kept; 0 keeps them forever. */
  readonly keepSeconds: number;
}

/**
 * A history row's duration, from its start to its end, in ms (float8; 0 without a start, which a
 * completed row always has).
 */
const durationMs = (h: string) =>
  `greatest(0, COALESCE(extract(epoch FROM ${h}."completedAt" - ${h}."startedAt")::float8 * 1000, 0))`;

/**
 * The statements of the per-minute figures (migration 18): the tables `"jobMinute"` (a minute
 * written), `"jobTaskMinute"` (a task's endings and durations in it), `"jobTaskHour"` (the same
 * summed per hour) and `"jobQueueMinute"` (a queue's depth at its end).
 */
export function minuteStatsSql(schema: SchemaName) {
  const s = schema.quoted;
  /**
   * Per task, state and duration bucket, the jobs whose last attempt ended (completed or failed)
   * in [`from`, `from` + 1 minute): one range of an index on "completedAt"
   * (`test/admin/admin-plans.spec.ts`), each completed row read for its start.
   */
  const endedIn = (from: string) => `
    SELECT h.task, h.state,
           CASE WHEN h.state = 'completed' THEN ${durationBucketSql(durationMs('h'))} END AS bucket,
           count(*)::int AS n
    FROM ${s}."jobHistory" h
    WHERE h.state IN ('completed', 'failed')
      AND h."completedAt" >= ${from} AND h."completedAt" < ${from} + interval '1 minute'
    GROUP BY 1, 2, 3`;

  /** A minute row's minute is in the hour before the hour of $1. */
  const inPreviousHour = `minute >= date_trunc('hour', $1::timestamptz) - interval '1 hour'
                AND minute < date_trunc('hour', $1::timestamptz)`;

  return {
    /**
     * The lease of the minute that closed last (it ended more than $2 seconds ago): taken by one
     * instance once, the first to ask, since "lastCheckedAt" then is that minute and the next
     * asker's `<` fails. A second asker waits on the row lock and, once the first commits, finds
     * the row changed and takes nothing. An instance that dies holding the lease leaves its minute
     * unwritten (missing), never written twice: `writeMinute`'s insert of the minute is the
     * guarantee, the lease only spares the other instances a sample of the queue.
     *
     * $1 instance $2 grace (seconds)
     */
    takeMinute: `
      UPDATE ${s}."jobLock" l SET "lastCheckedBy" = $1, "lastCheckedAt" = m.minute
      FROM (SELECT date_trunc('minute', now() - make_interval(secs => $2)) - interval '1 minute' AS minute) m
      WHERE l.key = 'minuteStats' AND l."lastCheckedAt" < m.minute
      RETURNING m.minute`,

    /**
     * Writes minute $1 once: its row of `"jobMinute"` (`ON CONFLICT DO NOTHING`: a minute already
     * written inserts nothing), and only if that row was inserted, its task rows (from history,
     * `endedIn`) and its queue rows (the sample given); the task rows of the hour before $1's
     * hour, summed from its minutes, unless written already (`hours`); and deletes the minutes and
     * hours older than the kept window (a minute's rows with it: `ON DELETE CASCADE`). One
     * statement: its figures are all written or none are. Returns whether it wrote the minute.
     *
     * The hour's rows read the minute rows committed before this statement: written in order, as
     * the writer writes them, they are the hour's every minute written. A minute of that hour
     * written later (a backfill out of order) would be counted in its minute row only, and read
     * only where no hour row is (`durations`).
     */
    writeMinute: sqlStatement(
      `
      WITH marked AS (
        INSERT INTO ${s}."jobMinute" (minute, "writtenBy")
        -- Not once its hour was summed (a writer that stalled past the hour's end): a minute
        -- left unwritten is read from history, where a minute row the hour's sum lacks is lost.
        SELECT $1::timestamptz, $2::text WHERE NOT EXISTS (SELECT 1 FROM ${s}."jobTaskHour"
                                        WHERE hour = date_trunc('hour', $1::timestamptz))
        ON CONFLICT (minute) DO NOTHING
        RETURNING minute
      ), tasks AS (
        INSERT INTO ${s}."jobTaskMinute" (minute, task, completed, failed, buckets, counts)
        SELECT $1, e.task,
               COALESCE(sum(e.n) FILTER (WHERE e.state = 'completed'), 0),
               COALESCE(sum(e.n) FILTER (WHERE e.state = 'failed'), 0),
               COALESCE(array_agg(e.bucket ORDER BY e.bucket) FILTER (WHERE e.state = 'completed'), '{}'),
               COALESCE(array_agg(e.n ORDER BY e.bucket) FILTER (WHERE e.state = 'completed'), '{}')
        FROM (${endedIn('$1::timestamptz')}) e
        WHERE EXISTS (SELECT 1 FROM marked)
        GROUP BY e.task
        RETURNING 1
      ), queues AS (
        INSERT INTO ${s}."jobQueueMinute" (minute, queue, pending, blocked, due, active)
        SELECT $1, q.* FROM unnest($3::text[], $4::int[], $5::int[], $6::int[], $7::int[]) AS q
        WHERE EXISTS (SELECT 1 FROM marked)
        RETURNING 1
      ), hours AS (
        INSERT INTO ${s}."jobTaskHour" (hour, task, completed, failed, buckets, counts)
        SELECT date_trunc('hour', $1::timestamptz) - interval '1 hour', t.task, t.completed, t.failed,
               COALESCE(b.buckets, '{}'), COALESCE(b.counts, '{}')
        FROM (SELECT task, sum(completed)::int AS completed, sum(failed)::int AS failed
              FROM ${s}."jobTaskMinute" WHERE ${inPreviousHour} GROUP BY task) t
        LEFT JOIN (SELECT task, array_agg(bucket ORDER BY bucket) AS buckets, array_agg(n ORDER BY bucket) AS counts
                   FROM (SELECT m.task, u.bucket, sum(u.n)::int AS n
                         FROM ${s}."jobTaskMinute" m, unnest(m.buckets, m.counts) AS u(bucket, n)
                         WHERE ${inPreviousHour.replaceAll('minute', 'm.minute')} GROUP BY 1, 2) per_bucket
                   GROUP BY task) b ON b.task = t.task
        -- Uncorrelated: a one-time filter, so that an hour written already reads nothing.
        WHERE EXISTS (SELECT 1 FROM marked)
          AND NOT EXISTS (SELECT 1 FROM ${s}."jobTaskHour"
                          WHERE hour = date_trunc('hour', $1::timestamptz) - interval '1 hour')
        ON CONFLICT (hour, task) DO NOTHING
      ), pruned AS (
        DELETE FROM ${s}."jobMinute"
        WHERE EXISTS (SELECT 1 FROM marked) AND $8 > 0 AND minute < $1 - make_interval(secs => $8)
      ), "prunedHours" AS (
        DELETE FROM ${s}."jobTaskHour"
        WHERE EXISTS (SELECT 1 FROM marked) AND $8 > 0 AND hour < $1 - make_interval(secs => $8)
      )
      SELECT EXISTS (SELECT 1 FROM marked) AS written,
             (SELECT count(*) FROM tasks)::int AS tasks, (SELECT count(*) FROM queues)::int AS queues`,
      (p: MinuteToWrite) => [
        p.minute,
        p.writtenBy,
        p.queues.map((q) => q.name),
        p.queues.map((q) => q.pending),
        p.queues.map((q) => q.blocked),
        p.queues.map((q) => q.due),
        p.queues.map((q) => q.active),
        p.keepSeconds,
      ],
    ),

    /**
     * Per task and duration bucket (NULL: the failed ones), the jobs that ended since the start
     * of the minute $1 minutes ago: from the hour rows of the window's hours that have them, the
     * minute rows of its other hours (the hour running now, the window's first, partial one, an
     * hour no minute after it summed), and history for every minute of the window not written (the
     * minute running now, the one just closed, any minute no instance wrote), one range of an
     * index on "completedAt" each. So the counts are history's, while only the minutes not written
     * are read from it, and a day reads about 24 rows a task with its buckets instead of 1,440.
     * `completed` of a bucket row is its count; the completed of a task are the sum of its buckets'.
     *
     * $1 minutes
     */
    durations: `
      WITH bounds AS (
        SELECT date_trunc('minute', now() - make_interval(mins => $1)) AS start,
               date_trunc('minute', now()) AS current
      ), "summedHours" AS (
        SELECT DISTINCT h.hour FROM ${s}."jobTaskHour" h, bounds b WHERE h.hour >= b.start
      ), "otherHours" AS (
        SELECT g.hour FROM bounds b,
               generate_series(date_trunc('hour', b.start), date_trunc('hour', b.current), interval '1 hour') AS g(hour)
        WHERE g.hour NOT IN (SELECT hour FROM "summedHours")
      ), recorded AS (
        SELECT h.task, h.failed, h.buckets, h.counts
        FROM ${s}."jobTaskHour" h, bounds b WHERE h.hour >= b.start
        UNION ALL
        SELECT t.task, t.failed, t.buckets, t.counts
        FROM "otherHours" o CROSS JOIN bounds b
        JOIN ${s}."jobTaskMinute" t
          ON t.minute >= greatest(o.hour, b.start) AND t.minute < o.hour + interval '1 hour'
      ), unwritten AS (
        SELECT g.minute FROM bounds b, generate_series(b.start, b.current, interval '1 minute') AS g(minute)
        WHERE NOT EXISTS (SELECT 1 FROM ${s}."jobMinute" m WHERE m.minute = g.minute)
      ), parts AS (
        SELECT r.task, unnest(r.buckets)::int AS bucket, unnest(r.counts) AS completed, 0 AS failed
        FROM recorded r
        UNION ALL
        SELECT r.task, NULL, 0, r.failed FROM recorded r WHERE r.failed > 0
        UNION ALL
        SELECT e.task, e.bucket, CASE WHEN e.state = 'completed' THEN e.n ELSE 0 END,
               CASE WHEN e.state = 'failed' THEN e.n ELSE 0 END
        FROM unwritten w CROSS JOIN LATERAL (${endedIn('w.minute')}) AS e
      )
      SELECT task, bucket, sum(completed)::int AS completed, sum(failed)::int AS failed
      FROM parts GROUP BY task, bucket ORDER BY task, bucket`,

    /**
     * Queue $1's depth at the end of each minute written since the start of the minute $2 minutes
     * ago, oldest first: a range of the primary key. A minute no instance wrote is absent.
     *
     * $1 queue $2 minutes
     */
    depth: `
      SELECT minute, pending, blocked, due, active FROM ${s}."jobQueueMinute"
      WHERE queue = $1 AND minute >= date_trunc('minute', now() - make_interval(mins => $2))
      ORDER BY minute`,
  };
}

export type MinuteStatsSql = ReturnType<typeof minuteStatsSql>;
