import type { SchemaName } from '../database/schema-name.js';
import { queuedJobState, queuedWaitUntil } from '../common/job-states.js';
import { flowJobState } from '../job-queue/flows.sql.js';
import { filterSql, notQueuedAgain } from '../job-queue/job-filter.sql.js';

/**
 * The longest preview a list gives of a job's payload, error or result, in characters (`…`
 * included); `list-previews.ts` then bounds it in bytes too.
 */
export const PREVIEW_CHARS = 200;
/**
 * A result or a progress stored in more bytes than this is not previewed in lists (see
 * `jsonPreview`). Both have a size limit (`maxResultBytes`, 16 kB for a progress).
 */
const BOUNDED_PREVIEW_STORED_BYTES = 8192;
/**
 * A payload stored in more bytes than this is not previewed in lists. Lower than a result's: a
 * payload has no size limit, and a highly compressible one may be a hundred times its stored size.
 */
const PAYLOAD_PREVIEW_STORED_BYTES = 2048;

/*
 * A listed job's JSON value (payload, result, progress), as JSON text cut to PREVIEW_CHARS: a
 * list of two hundred jobs with large values would otherwise be megabytes on every poll of the
 * dashboard. A value stored in more than `storedBytes` is not read at all ('…' alone): jsonb cannot
 * be read in part, so a preview of it would detoast and decompress the whole value for every row
 * of every poll. pg_column_size reads the stored size from the row without detoasting it.
 */
const jsonPreview = (column: string, storedBytes: number) => `CASE
    WHEN ${column} IS NULL THEN NULL
    WHEN pg_column_size(${column}) > ${storedBytes} THEN '…'
    WHEN length(${column}::text) > ${PREVIEW_CHARS}
      THEN left(${column}::text, ${PREVIEW_CHARS - 1}) || '…'
    ELSE ${column}::text
  END`;

/*
 * A listed job's error message cut to PREVIEW_CHARS. Text can be read in part: substr reads only
 * the first characters of a toasted value, and octet_length its stored length, whatever its size;
 * left and length would detoast it whole.
 */
const textPreview = (column: string) => `CASE
    WHEN octet_length(${column}) <= octet_length(substr(${column}, 1, ${PREVIEW_CHARS})) THEN ${column}
    ELSE substr(${column}, 1, ${PREVIEW_CHARS - 1}) || '…'
  END`;

/**
 * The admin API's statements. Every value is a parameter; the schema is the only identifier.
 *
 * A job is in exactly one place: pending in `jobs` (with, after a failed or snoozed attempt, a
 * `failed` or `snoozed` row in `jobHistory` that describes that attempt), else in `jobHistory`. Lists of history states skip
 * jobs that are queued again, so a job waiting for a retry is listed as pending, never as failed.
 *
 * Lists give previews of payloads, errors, results and progress, never the values: those are in
 * the job's own view (`getJob`), one job at a time.
 */
export function adminSql({ quoted: s }: SchemaName) {
  const resultPreview = jsonPreview('h.result', BOUNDED_PREVIEW_STORED_BYTES);
  const progressPreview = jsonPreview('h.progress', BOUNDED_PREVIEW_STORED_BYTES);
  const pendingColumns = `
    j.id, j.task, ${queuedJobState('j')} AS state, ${jsonPreview('j.payload', PAYLOAD_PREVIEW_STORED_BYTES)} AS "payloadPreview",
    j.priority, j.retries AS attempt, j."maxRetries",
    ${queuedWaitUntil('j')} AS "waitUntil", j."createdAt", h."startedAt",
    h."completedAt", ${textPreview('h."lastErrorMessage"')} AS "lastErrorPreview", h."executedBy",
    ${progressPreview} AS "progressPreview", j.queue, j."groupKey",
    COALESCE(j."uniqueKey", h."uniqueKey") AS "uniqueKey", NULL::text AS "resultPreview", COALESCE(h.snoozes, 0) AS snoozes,
    CASE WHEN h.state = 'snoozed' THEN j."waitUntil" END AS "snoozedUntil", j."inFlow", j."createdAt" AS "sortAt",
    j."createdAt"::text AS "cursorAt"`;
  const historyColumns = (sortAt: string) => `
    h.id, h.task, h.state, ${jsonPreview('h.payload', PAYLOAD_PREVIEW_STORED_BYTES)} AS "payloadPreview",
    h.priority, h.attempt, h."maxRetries", NULL::timestamptz AS "waitUntil", h."createdAt",
    h."startedAt", h."completedAt", ${textPreview('h."lastErrorMessage"')} AS "lastErrorPreview", h."executedBy",
    ${progressPreview} AS "progressPreview", h.queue, h."groupKey", h."uniqueKey",
    ${resultPreview} AS "resultPreview", h.snoozes, NULL::timestamptz AS "snoozedUntil", h."inFlow", ${sortAt} AS "sortAt",
    ${sortAt}::text AS "cursorAt"`;
  const notQueued = notQueuedAgain(s, 'h');
  /*
   * The search, $1 to $10: the filter of the bulk calls ($1-$7, `filterSql`, so that a count is
   * what a bulk action on the same filter takes), an id range ($8, $9: a prefix's first and last
   * ids) and a flow ($10). Each statement's own parameters follow, from $11.
   */
  const search = (alias: string, table: 'jobs' | 'jobHistory') =>
    `${filterSql(s, alias, table, 1)}
     AND ($8::uuid IS NULL OR ${alias}.id BETWEEN $8 AND $9::uuid)
     AND ($10::uuid IS NULL OR EXISTS (SELECT 1 FROM ${s}."jobFlowMember" m
                                      WHERE m."flowId" = $10 AND m."jobId" = ${alias}.id))`;
  const matchingJobs = (alias: string) => search(alias, 'jobs');
  const matchingHistory = (alias: string) => search(alias, 'jobHistory');
  /** Rows after the cursor ($n a time, $n+1 an id) in the order `at` DESC, id. */
  const after = (at: string, alias: string, n: number) =>
    `($${n}::timestamptz IS NULL OR ${at} < $${n} OR (${at} = $${n} AND ${alias}.id > $${n + 1}::uuid))`;
  /*
   * A listed job's flow, joined to the rows of a page once it is cut: a primary-key probe of
   * "jobFlowMember" per flow job shown ("inFlow" is NULL for every other job).
   */
  const flowOf = (alias: string) =>
    `LEFT JOIN ${s}."jobFlowMember" fm ON ${alias}."inFlow" AND fm."jobId" = ${alias}.id`;

  /*
   * A page of pending jobs is cut from `jobs` first and only then joined to its history rows (the
   * previous failed attempt), one primary-key look-up each: joined first, the planner may hash the
   * whole history to serve a page of fifty.
   *
   * History is the big table (a day of jobs by default), so every statement here reads it through
   * an index, in the order the index keeps, and stops at the page or the time window:
   * - an attempt that has not ended is `active`, sorted by "startedAt" (job_history_active);
   * - an attempt that ended has its "completedAt" (every write that ends one sets it), sorted by
   *   it: per state through job_history_state_ended_at, across states through job_history_ended_at
   *   (the planner takes either for a time window: both are ranges of "completedAt").
   * A sort key such as COALESCE("completedAt", "startedAt") would be an expression no index
   * holds, and would sort the whole history on every page. (An `interrupted` row without
   * "completedAt" is an attempt released at shutdown: its job is queued again, so it is listed
   * as pending.) `test/admin/admin-plans.spec.ts` holds the plans.
   */
  return {
    /**
     * Queued jobs in state $11 (pending, blocked in a flow, or suspended) matching the search, in
     * claim order (jobs_claim_order: a blocked job's "waitUntil" is 'infinity', so blocked jobs
     * come after the pending ones of their priority), after the cursor ($14 priority, $15
     * "waitUntil", $16 seq) when there is one. $12 limit $13 offset
     */
    listPending: `
      SELECT ${pendingColumns}, j."waitUntil"::text AS "cursorWaitUntil", j.seq::text AS "cursorSeq",
             fm."flowId"
      FROM (SELECT * FROM ${s}.jobs q
            WHERE ${matchingJobs('q')} AND ${queuedJobState('q')} = $11::text
              AND ($14::int IS NULL OR q.priority < $14
                   OR (q.priority = $14 AND (q."waitUntil", q.seq) > ($15::timestamptz, $16::bigint)))
            ORDER BY priority DESC, "waitUntil", seq
            LIMIT $12 OFFSET $13) AS j
      LEFT JOIN ${s}."jobHistory" h ON h.id = j.id
      ${flowOf('j')}
      ORDER BY j.priority DESC, j."waitUntil", j.seq`,

    /**
     * Running attempts matching the search, latest started first, after the cursor ($13, $14).
     * $11 limit $12 offset
     */
    listActive: `
      SELECT ${historyColumns('h."startedAt"')}, fm."flowId"
      FROM (SELECT * FROM ${s}."jobHistory" a
            WHERE a.state = 'active' AND ${matchingHistory('a')} AND ${after('a."startedAt"', 'a', 13)}
            ORDER BY "startedAt" DESC, id
            LIMIT $11 OFFSET $12) AS h
      ${flowOf('h')}
      ORDER BY h."startedAt" DESC, h.id`,

    /**
     * Jobs that ended in state $11 matching the search, latest first, after the cursor ($14, $15).
     * Without other conditions than the task, the page is chosen from the index alone
     * (job_history_state_ended_at holds the task and the id), so a task filter that matches few
     * rows skips the others without visiting them; only the page's rows are then read.
     * $12 limit $13 offset
     */
    listEnded: `
      SELECT ${historyColumns('h."completedAt"')}, fm."flowId"
      FROM (SELECT p.id FROM ${s}."jobHistory" p
            WHERE p.state = $11 AND p."completedAt" IS NOT NULL AND ${matchingHistory('p')}
              AND ${notQueuedAgain(s, 'p')} AND ${after('p."completedAt"', 'p', 14)}
            ORDER BY p."completedAt" DESC, p.id
            LIMIT $12 OFFSET $13) AS page
      JOIN ${s}."jobHistory" h ON h.id = page.id
      ${flowOf('h')}
      ORDER BY h."completedAt" DESC, h.id`,

    /**
     * Every job matching the search, latest activity first, after the cursor ($13, $14): the
     * three sources each give their first $11 + $12 rows in index order (no page can need more of
     * any one), merged and paged; the page's flow jobs then get their flow. $11 limit $12 offset
     */
    listAll: `
      SELECT listed.*, fm."flowId" FROM (
      SELECT * FROM (
        (SELECT ${pendingColumns}
         FROM (SELECT * FROM ${s}.jobs q
               WHERE ${matchingJobs('q')} AND ${after('q."createdAt"', 'q', 13)}
               ORDER BY "createdAt" DESC, id
               LIMIT $11::int + $12::int) AS j
         LEFT JOIN ${s}."jobHistory" h ON h.id = j.id)
        UNION ALL
        (SELECT ${historyColumns('h."startedAt"')}
         FROM ${s}."jobHistory" h
         WHERE h.state = 'active' AND ${matchingHistory('h')} AND ${after('h."startedAt"', 'h', 13)}
         ORDER BY h."startedAt" DESC, h.id
         LIMIT $11::int + $12::int)
        UNION ALL
        (SELECT ${historyColumns('h."completedAt"')}
         FROM ${s}."jobHistory" h
         WHERE h."completedAt" IS NOT NULL AND ${matchingHistory('h')} AND ${notQueued}
           AND ${after('h."completedAt"', 'h', 13)}
         ORDER BY h."completedAt" DESC, h.id
         LIMIT $11::int + $12::int)
      ) AS merged
      ORDER BY "sortAt" DESC, id
      LIMIT $11 OFFSET $12) AS listed
      ${flowOf('listed')}
      ORDER BY listed."sortAt" DESC, listed.id`,

    /** How many queued jobs in state $11 match the search, counting at most $12. */
    countPending: `
      SELECT count(*)::int AS count FROM (
        SELECT 1 FROM ${s}.jobs q
        WHERE ${matchingJobs('q')} AND ${queuedJobState('q')} = $11::text LIMIT $12) AS c`,

    /** How many running jobs match the search, counting at most $11. */
    countActive: `
      SELECT count(*)::int AS count FROM (
        SELECT 1 FROM ${s}."jobHistory" a
        WHERE a.state = 'active' AND ${matchingHistory('a')} LIMIT $11) AS c`,

    /** How many jobs that ended in state $11 match the search, counting at most $12. */
    countEnded: `
      SELECT count(*)::int AS count FROM (
        SELECT 1 FROM ${s}."jobHistory" p
        WHERE p.state = $11 AND p."completedAt" IS NOT NULL AND ${matchingHistory('p')}
          AND ${notQueuedAgain(s, 'p')} LIMIT $12) AS c`,

    /** How many jobs in any state match the search, counting at most $11 of each source. */
    countAll: `
      SELECT (SELECT count(*) FROM (SELECT 1 FROM ${s}.jobs q WHERE ${matchingJobs('q')} LIMIT $11) AS c)::int
           + (SELECT count(*) FROM (SELECT 1 FROM ${s}."jobHistory" h
                                    WHERE h.state = 'active' AND ${matchingHistory('h')} LIMIT $11) AS c)::int
           + (SELECT count(*) FROM (SELECT 1 FROM ${s}."jobHistory" h
                                    WHERE h."completedAt" IS NOT NULL AND ${matchingHistory('h')}
                                      AND ${notQueued} LIMIT $11) AS c)::int
             AS count`,

    /** The history row of a job (its last attempt), whatever its state. $1 id */
    history: `SELECT * FROM ${s}."jobHistory" WHERE id = $1`,

    /**
     * The instances registered, with their heartbeats and what each runs now (the first 20 of its
     * attempts, oldest first, and how many): the active set, grouped once, through
     * job_history_active. An instance is alive while its heartbeat is within its own
     * `instanceTimeout`; a dead one's row stays until a reaper takes its jobs.
     */
    instances: `
      WITH running AS (
        SELECT "executedBy" AS instance, count(*)::int AS running,
               (array_agg(json_build_object('id', id, 'task', task, 'startedAt', "startedAt")
                          ORDER BY "startedAt", id))[1:20] AS jobs
        FROM ${s}."jobHistory" WHERE state = 'active' GROUP BY 1
      )
      SELECT i.id, i.hostname, i.pid, i."startedAt", i."heartbeatAt",
             i."heartbeatAt" >= now() - make_interval(secs => i."instanceTimeout") AS alive,
             extract(epoch FROM now() - i."heartbeatAt")::float8 AS "silentForSeconds",
             i.concurrency, COALESCE(r.running, 0) AS running, COALESCE(to_json(r.jobs), '[]') AS jobs
      FROM ${s}.instances i LEFT JOIN running r ON r.instance = i.id
      ORDER BY i.id`,

    /**
     * The cron slot job $1 was planned for (or `triggerSchedule`'s), if any: its row of
     * `jobScheduleSlot`, through job_schedule_slot_job. A slot row is kept as long as history keeps
     * its job (see the planner's `pruneSlots`).
     */
    cronSlot: `SELECT schedule, slot FROM ${s}."jobScheduleSlot" WHERE "jobId" = $1 LIMIT 1`,

    /**
     * Every schedule's latest $1 slots at or before now, latest first, each with its job's state
     * (`flowJobState` reads any job's from its two rows): queued (its row of `jobs`), else what
     * history says (`skipped` for a missed slot), NULL once its job's record is gone. Per
     * schedule, one backward range of the slot rows' primary key (schedule, slot), stopped at $1
     * rows; each slot's job is then looked up by its id.
     */
    lastRuns: `
      SELECT sc.name AS schedule, r.slot, r."jobId", r.state
      FROM ${s}."jobSchedule" sc
      CROSS JOIN LATERAL (
        SELECT p.slot, p."jobId", ${flowJobState} AS state
        FROM (SELECT slot, "jobId" FROM ${s}."jobScheduleSlot"
              WHERE schedule = sc.name AND slot <= now()
              ORDER BY slot DESC LIMIT $1) AS p
        LEFT JOIN ${s}.jobs j ON j.id = p."jobId"
        LEFT JOIN ${s}."jobHistory" h ON h.id = p."jobId"
      ) AS r
      ORDER BY sc.name, r.slot DESC`,

    /**
     * A job's attempts that ended without completing (migration 16), first first: a range of the
     * primary key ("jobId", "startedAt"). $1 id
     */
    attempts: `
      SELECT attempt, outcome, "executedBy", "startedAt", "endedAt", error, stack
      FROM ${s}."jobAttempt" WHERE "jobId" = $1 ORDER BY "startedAt"`,

    /**
     * Per task: queued (pending, and blocked in a flow), due, snoozed and running counts, the jobs that ended in the last $1
     * minutes, and how long the longest-waiting due job has waited. The page asks every 2 s: ended
     * jobs are counted in a recent window only, a range of an index on "completedAt", never across
     * the whole history. Whether a failed job is queued again is a look-up per failed row of the
     * window (a few), not a join: a join hashed every queued id on every poll, a cost that grows
     * with the queue. The service runs it without JIT (`read`), which its estimated cost would
     * pass (see "The dashboard on a big history" in docs/performance.md). $1 minutes
     */
    stats: `
      WITH queued AS (
        SELECT task, count(*) FILTER (WHERE COALESCE("blockedBy", 0) = 0)::int AS pending,
               count(*) FILTER (WHERE "blockedBy" > 0)::int AS blocked,
               count(*) FILTER (WHERE "waitUntil" <= now())::int AS due,
               extract(epoch FROM now() - min("waitUntil") FILTER (WHERE "waitUntil" <= now()))::float8
                 AS "oldestPendingAgeSeconds"
        FROM ${s}.jobs GROUP BY task
      ), running AS (
        SELECT task, count(*)::int AS active
        FROM ${s}."jobHistory" WHERE state = 'active' GROUP BY task
      ), ended AS (
        SELECT h.task,
               count(*) FILTER (WHERE h.state = 'completed')::int AS completed,
               count(*) FILTER (WHERE h.state = 'failed' AND ${notQueued})::int AS failed,
               count(*) FILTER (WHERE h.state = 'interrupted' AND ${notQueued})::int AS interrupted,
               count(*) FILTER (WHERE h.state = 'cancelled')::int AS cancelled,
               count(*) FILTER (WHERE h.state = 'skipped')::int AS skipped
        FROM ${s}."jobHistory" h
        WHERE h.state IN ('completed', 'failed', 'interrupted', 'cancelled', 'skipped')
          AND h."completedAt" >= now() - make_interval(mins => $1)
        GROUP BY h.task
      ), snoozed AS (
        -- Queued jobs waiting out a snooze: their history row says so until they are claimed
        -- again. A snooze ends its attempt with "completedAt", so job_history_state_ended_at holds
        -- them, a range as small as the jobs snoozed right now.
        SELECT task, count(*)::int AS snoozed
        FROM ${s}."jobHistory" WHERE state = 'snoozed' AND "completedAt" IS NOT NULL GROUP BY task
      ), tasks AS (
        SELECT task FROM queued UNION SELECT task FROM running UNION SELECT task FROM ended
      )
      SELECT t.task,
             COALESCE(q.pending, 0) AS pending, COALESCE(q.blocked, 0) AS blocked,
             COALESCE(q.due, 0) AS due,
             COALESCE(r.active, 0) AS active, COALESCE(e.completed, 0) AS completed,
             COALESCE(e.failed, 0) AS failed, COALESCE(e.interrupted, 0) AS interrupted,
             COALESCE(e.cancelled, 0) AS cancelled, COALESCE(e.skipped, 0) AS skipped,
             COALESCE(z.snoozed, 0) AS snoozed, q."oldestPendingAgeSeconds"
      FROM tasks t
      LEFT JOIN queued q ON q.task = t.task
      LEFT JOIN running r ON r.task = t.task
      LEFT JOIN ended e ON e.task = t.task
      LEFT JOIN snoozed z ON z.task = t.task
      ORDER BY 1`,

    /**
     * Jobs that ended per minute over the last $1 minutes, every minute present (oldest first):
     * one range of an index on "completedAt", counted per minute (not one look-up per minute).
     */
    throughput: `
      WITH ended AS (
        SELECT date_trunc('minute', h."completedAt") AS minute,
               count(*) FILTER (WHERE h.state = 'completed')::int AS completed,
               count(*) FILTER (WHERE h.state = 'failed')::int AS failed
        FROM ${s}."jobHistory" h
        WHERE h.state IN ('completed', 'failed')
          AND h."completedAt" >= date_trunc('minute', now()) - make_interval(mins => $1 - 1)
          AND h."completedAt" < date_trunc('minute', now()) + interval '1 minute'
        GROUP BY 1
      )
      SELECT m.minute, COALESCE(e.completed, 0) AS completed, COALESCE(e.failed, 0) AS failed
      FROM generate_series(date_trunc('minute', now()) - make_interval(mins => $1 - 1),
                           date_trunc('minute', now()), interval '1 minute') AS m(minute)
      LEFT JOIN ended e ON e.minute = m.minute
      ORDER BY m.minute`,

    /**
     * Per task, over the jobs whose last attempt ended in the last $1 minutes: how many completed
     * and failed, and how long the completed ones took from start to end (50th, 95th and 99th
     * percentiles, in ms). One range of job_history_state_ended_at per state, each row read for its
     * start: the page asks for the last hour (about 42,000 rows a million a day), not every 2 s.
     */
    durations: `
      SELECT h.task,
             count(*) FILTER (WHERE h.state = 'completed')::int AS completed,
             count(*) FILTER (WHERE h.state = 'failed')::int AS failed,
             percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (
               ORDER BY extract(epoch FROM h."completedAt" - h."startedAt") * 1000
             ) FILTER (WHERE h.state = 'completed') AS "durationsMs"
      FROM ${s}."jobHistory" h
      WHERE h.state IN ('completed', 'failed')
        AND h."completedAt" >= now() - make_interval(mins => $1)
      GROUP BY h.task
      ORDER BY h.task`,

    /**
     * Flows, latest first (job_flow_created_at), each with its jobs counted by state. The page of
     * flows is cut first; then each flow's jobs are read through "jobFlowMember"'s ("flowId", ref)
     * key, with a primary-key look-up of each in the queue and in history. A job whose history row
     * retention has removed has no state: it counts in "jobCount" only. $1 limit $2 offset
     */
    listFlows: `
      SELECT f.id AS "flowId", f.name, f."createdAt", c."jobCount", c.counts
      FROM (SELECT * FROM ${s}."jobFlow" ORDER BY "createdAt" DESC, id DESC LIMIT $1 OFFSET $2) AS f
      CROSS JOIN LATERAL (
        SELECT COALESCE(sum(n), 0)::int AS "jobCount",
               COALESCE(json_object_agg(state, n) FILTER (WHERE state IS NOT NULL), '{}') AS counts
        FROM (SELECT ${flowJobState} AS state, count(*)::int AS n
              FROM ${s}."jobFlowMember" m
              LEFT JOIN ${s}.jobs j ON j.id = m."jobId"
              LEFT JOIN ${s}."jobHistory" h ON h.id = m."jobId"
              WHERE m."flowId" = f.id
              GROUP BY 1) AS per_state
      ) AS c
      ORDER BY f."createdAt" DESC, f.id DESC`,
  };
}

export type AdminSql = ReturnType<typeof adminSql>;
