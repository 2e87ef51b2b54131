import { queuedJobState, queuedWaitUntil } from '../common/job-states.js';
import { recordedAttempt } from '../common/recorded-attempt.js';
import { preparedStatement, sqlStatement } from '../database/sql-statement.js';
import type { SchemaName } from '../database/schema-name.js';
import type { TraceCarrier } from '../telemetry/jobs-telemetry.js';
import type { ValidatedJob } from './validate-job.js';
import { filterSql, filterValues, notQueuedAgain } from './job-filter.sql.js';
import type { FilterValues } from './job-filter.sql.js';

/** The parameters of the inserts (`insertJobs` and its variants). */
interface InsertJobsParams {
  /** One job for `insertJob` and `insertKeyedJob`; any number for the batch statements. */
  readonly jobs: readonly ValidatedJob[];
  readonly createdBy: string;
  /** Whether to notify `newJob` when a job is due now. */
  readonly notify: boolean;
  readonly channel: string;
  readonly notification: string;
  /** Of the whole batch: one enqueue, one span. */
  readonly traceContext: TraceCarrier | null;
}

/** A filter that matches every job. */
const ANY_JOB: FilterValues = {
  task: null,
  queue: null,
  groupKey: null,
  createdAfter: null,
  createdBefore: null,
  errorPattern: null,
  uniqueKey: null,
};

/** The parameters of a batch of `cancelQueuedJobs` or `cancelRunningJobs`. */
interface CancelBatchParams {
  readonly filter: FilterValues;
  readonly channel: string;
  /** How many jobs the batch takes at most. */
  readonly limit: number;
}

/**
 * A NOT NULL column of a batch: its one value when every job shares it, else one per job. Most
 * batches are of one task with the same options, and five one-element arrays cost the database
 * (and the pg driver) far less to parse than five arrays of the batch's size.
 */
function sharedOrEach<T>(jobs: readonly ValidatedJob[], value: (job: ValidatedJob) => T): T[] {
  const first = value(jobs[0]);
  return jobs.every((job) => value(job) === first) ? [first] : jobs.map(value);
}

/**
 * The queue's statements (enqueue, look-up, cancel), built once per schema. Every value is a
 * parameter; the schema is the only identifier and is validated before it gets here.
 */
export function queueSql({ quoted: s }: SchemaName) {
  /**
   * The CTEs that cancel jobs, in one statement, ending with `cancelled` (id, task, awaited, queue) and
   * `told` (the notifications sent):
   * - the queued ones among `queuedIds` leave the queue and their history says `cancelled`;
   * - the running ones among `runningIds` have their active attempt ended `cancelled`, fenced like
   *   every ending by `state = 'active'`: no later write for that attempt (its completion, its
   *   failure and retry, a reaper's or shutdown's requeue) matches it any more, so the job stays
   *   cancelled whatever its task then does, and nothing runs it again. The instance running it is
   *   told (`cancelJob`) to abort it; if that notification is lost, its poll finds the attempt
   *   cancelled (`runner/ending.sql.ts`, `cancelledAttempts`). A retry from outside would have the
   *   next claim overwrite that history row, so the attempt is also kept in `jobAttempt`;
   * - whoever awaits one of them hears `jobCompleted` (cancelled).
   * A job is queued or running in any one snapshot, never both, so the two writes never touch the
   * same history row.
   */
  const cancelling = (queuedIds: string, runningIds: string, channel: string) => `
      removed AS (
        DELETE FROM ${s}.jobs WHERE id = ANY(${queuedIds}) RETURNING *
      ), dequeued AS (
        INSERT INTO ${s}."jobHistory" AS h (id, task, state, payload, priority, attempt, "maxRetries",
                                             "wasScheduled", awaited, "createdAt", "completedAt", queue,
                                             "groupKey", "inFlow", "uniqueKey")
        SELECT id, task, 'cancelled', payload, priority, retries, "maxRetries", "isScheduled", awaited,
               "createdAt", now(), queue, "groupKey", "inFlow", "uniqueKey"
        FROM removed
        ON CONFLICT (id) DO UPDATE SET state = 'cancelled', "completedAt" = now(), "updatedAt" = now()
        RETURNING id, task, awaited, queue
      ), stopped AS (
        UPDATE ${s}."jobHistory"
        SET state = 'cancelled', "completedAt" = now(), "updatedAt" = now()
        WHERE id = ANY(${runningIds}) AND state = 'active'
        RETURNING id, task, "claimToken", awaited, queue, attempt, "executedBy", "startedAt"
      ), ${recordedAttempt(s, { name: '"stopRecorded"', ended: 'stopped', outcome: 'cancelled', error: 'NULL::text' })}, cancelled AS (
        SELECT id, task, awaited, queue FROM dequeued
        UNION ALL SELECT id, task, awaited, queue FROM stopped
      ), told AS (
        SELECT pg_notify(${channel}, json_build_object('event', 'jobCompleted', 'id', id, 'state', 'cancelled')::text)
        FROM cancelled WHERE awaited
        UNION ALL
        SELECT pg_notify(${channel}, json_build_object('event', 'cancelJob', 'id', id, 'claim', "claimToken"::text)::text)
        FROM stopped
      )`;

  /**
   * Inserts a batch (one row per array element) and, when `notify` is true and something is due
   * now, notifies in the same statement: inside a caller's transaction the notification is then
   * delivered on commit and dropped on rollback, with no extra round trip. It returns the ids of the
   * keyed jobs that did go in: with `onKeyConflict` a job whose unique key is already pending is
   * skipped, and the caller looks that pending job up; a job without a key always goes in, or the
   * statement fails.
   *
   * In a batch, a NOT NULL column whose value every job shares (task, priority, maxRetries,
   * isScheduled, awaited, queue) may arrive as a one-element array (`sharedOrEach`): unnest pads
   * it with NULLs, which its one element fills. One job's values arrive as scalars instead of
   * arrays.
   */
  const insertJobs = (onKeyConflict: string, jobs: 'batch' | 'one') => {
    // A batch's shared column arrives as a one-element array, which unnest pads with NULLs.
    const shared = (column: string, parameter: number) =>
      jobs === 'batch' ? `coalesce(${column}, $${parameter}[1])` : column;
    return preparedStatement(
      `
      WITH input AS (
        ${
          jobs === 'batch'
            ? `SELECT * FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::int[], $5::timestamptz[],
                             $6::int[], $7::bool[], $8::text[], $9::bool[], $15::text[], $16::text[])
          WITH ORDINALITY AS t(id, task, payload, priority, "waitUntil", "maxRetries", "isScheduled",
                               "uniqueKey", awaited, queue, "groupKey", position)`
            : `SELECT $1::uuid AS id, $2::text AS task, $3::jsonb AS payload, $4::int AS priority,
               $5::timestamptz AS "waitUntil", $6::int AS "maxRetries", $7::bool AS "isScheduled",
               $8::text AS "uniqueKey", $9::bool AS awaited, $15::text AS queue, $16::text AS "groupKey",
               1 AS position`
        }
      ), inserted AS (
        INSERT INTO ${s}.jobs (id, task, payload, priority, "waitUntil", "maxRetries", "isScheduled",
                               "uniqueKey", awaited, "createdBy", "traceContext", queue, "groupKey",
                               "queuedAgain")
        SELECT id, ${shared('task', 2)}, payload, ${shared('priority', 4)}, coalesce("waitUntil", now()),
               ${shared('"maxRetries"', 6)}, ${shared('"isScheduled"', 7)}, "uniqueKey",
               ${shared('awaited', 9)}, $10, $14::jsonb, ${shared('queue', 15)}, "groupKey", false
        FROM input ORDER BY position
        ${onKeyConflict}
        RETURNING id, "waitUntil", "uniqueKey"
      ), woken AS (
        SELECT pg_notify($12, $13) WHERE $11 AND EXISTS (SELECT 1 FROM inserted WHERE "waitUntil" <= now())
      )
      SELECT ARRAY(SELECT id FROM inserted WHERE "uniqueKey" IS NOT NULL) AS "keyedIds",
             (SELECT count(*) FROM woken) AS notified`,
      (p: InsertJobsParams) => {
        const one = jobs === 'one';
        const each = <T>(value: (job: ValidatedJob) => T) =>
          one ? value(p.jobs[0]) : p.jobs.map(value);
        const shared = <T>(value: (job: ValidatedJob) => T) =>
          one ? value(p.jobs[0]) : sharedOrEach(p.jobs, value);
        return [
          each((job) => job.id),
          shared((job) => job.task),
          each((job) => job.payload),
          shared((job) => job.priority),
          each((job) => job.waitUntil),
          shared((job) => job.maxRetries),
          shared((job) => job.isScheduled),
          each((job) => job.uniqueKey),
          shared((job) => job.awaited),
          p.createdBy,
          p.notify,
          p.channel,
          p.notification,
          p.traceContext,
          shared((job) => job.queue),
          each((job) => job.groupKey),
        ];
      },
    );
  };
  /** A bulk cancel's batch: the channel, the batch's size, then its filter from $3 on. */
  const cancelBatchValues = (p: CancelBatchParams) => [
    p.channel,
    p.limit,
    ...filterValues(p.filter),
  ];
  const onKeyConflict = 'ON CONFLICT ("uniqueKey") WHERE "uniqueKey" IS NOT NULL DO NOTHING';

  return {
    /** A batch without unique keys: no conflict to resolve, so no speculative insertion to pay for. */
    insertJobs: insertJobs('', 'batch'),
    /** A batch with unique keys: a key already pending skips its job. */
    insertKeyedJobs: insertJobs(onKeyConflict, 'batch'),
    /**
     * One job (`addJob`), its values as scalars: one-element arrays to build, send and unnest are
     * work the most common insert need not do (see "Latency" in docs/performance.md).
     */
    insertJob: insertJobs('', 'one'),
    insertKeyedJob: insertJobs(onKeyConflict, 'one'),

    pendingByUniqueKey: `SELECT id, "uniqueKey" FROM ${s}.jobs WHERE "uniqueKey" = ANY($1::text[])`,

    /**
     * A queued job, pending or blocked (with the history of its earlier attempts, if any), else its
     * history.
     */
    getJob: preparedStatement(
      `
      SELECT *, (SELECT COALESCE(json_agg(json_build_object('name', st.name, 'state', st.state,
                                                           'startedAt', st."startedAt",
                                                           'endedAt', st."endedAt", 'error', st.error)
                                         ORDER BY st.position), '[]')
                 FROM ${s}."jobStep" st WHERE st."jobId" = $1) AS steps
      FROM (
        SELECT j.id, j.task, ${queuedJobState('j')} AS state,
               j.payload, j.priority, j.retries AS attempt, j."maxRetries",
               ${queuedWaitUntil('j')} AS "waitUntil", j."createdAt",
               h."startedAt", h."completedAt", h."lastErrorMessage", h."executedBy", NULL::jsonb AS result,
               h.progress, j.queue, j."groupKey", COALESCE(j."uniqueKey", h."uniqueKey") AS "uniqueKey",
               m."flowId", j."waitingFor"
        FROM ${s}.jobs j LEFT JOIN ${s}."jobHistory" h ON h.id = j.id
        LEFT JOIN ${s}."jobFlowMember" m ON j."inFlow" AND m."jobId" = j.id
        WHERE j.id = $1
        UNION ALL
        SELECT h.id, h.task, h.state, h.payload, h.priority, h.attempt, h."maxRetries", NULL,
               h."createdAt", h."startedAt", h."completedAt", h."lastErrorMessage", h."executedBy",
               h.result, h.progress, h.queue, h."groupKey", h."uniqueKey", m."flowId", NULL
        FROM ${s}."jobHistory" h
        LEFT JOIN ${s}."jobFlowMember" m ON h."inFlow" AND m."jobId" = h.id
        WHERE h.id = $1 AND NOT EXISTS (SELECT 1 FROM ${s}.jobs WHERE id = $1)
      ) job`,
      (p: { id: string }) => [p.id],
    ),

    /**
     * Cancels job `id`, queued or running, in one statement (see `cancelling`). A job between two
     * places (its claim, or its failed attempt's requeue, committed after this statement's snapshot
     * was taken) is found by neither write: `queued` and `state` then say where the snapshot saw it,
     * and the caller runs the statement again.
     */
    cancelJob: sqlStatement(
      `
      WITH queued AS (
        SELECT id FROM ${s}.jobs WHERE id = $1
      ), ran AS (
        SELECT id, state FROM ${s}."jobHistory" WHERE id = $1
      ), ${cancelling(
        'ARRAY(SELECT id FROM queued)',
        `ARRAY(SELECT id FROM ran WHERE state = 'active')`,
        '$2',
      )}
      SELECT EXISTS (SELECT 1 FROM queued) AS queued, (SELECT state FROM ran) AS state,
             (SELECT task FROM cancelled) AS task, (SELECT queue FROM cancelled) AS queue, (SELECT count(*) FROM told)::int AS told`,
      (p: { id: string; channel: string }) => [p.id, p.channel],
    ),

    /**
     * Cancels the jobs of flow $1 that are queued (blocked or pending) or running, as `cancelJob`
     * does. Its blocked jobs leave the queue in the same statement as the jobs they wait for, so the
     * endings it writes find no dependent left to cancel or unblock.
     */
    cancelFlow: `
      WITH members AS (
        SELECT "jobId" AS id FROM ${s}."jobFlowMember" WHERE "flowId" = $1
      ), ${cancelling(
        `ARRAY(SELECT j.id FROM ${s}.jobs j JOIN members m ON m.id = j.id)`,
        `ARRAY(SELECT h.id FROM ${s}."jobHistory" h JOIN members m ON m.id = h.id WHERE h.state = 'active')`,
        '$2',
      )}
      SELECT COALESCE((SELECT json_agg(json_build_object('id', id, 'task', task, 'queue', queue))
                       FROM cancelled), '[]') AS jobs,
             (SELECT count(*) FROM told)::int AS told`,

    /**
     * Cancels up to `limit` queued jobs matching the filter and in one of `queuedStates`
     * (`blocked`, `pending`, `suspended`), locking them first: a job being claimed is waited for, then left out
     * (it is running by the time this commits, and `cancelRunningJobs`, run after this, finds it).
     * A blocked flow job's cancel ends it, so its own dependents follow (the flowJobEnded trigger).
     * Returns how many it picked: fewer than `limit` means none is left.
     */
    cancelQueuedJobs: sqlStatement(
      `
      WITH picked AS (
        SELECT id FROM ${s}.jobs j
        WHERE ${filterSql(s, 'j', 'jobs', 3)} AND ${queuedJobState('j')} = ANY($10::text[])
        LIMIT $2 FOR UPDATE
      ), ${cancelling('ARRAY(SELECT id FROM picked)', `'{}'::uuid[]`, '$1')}
      SELECT (SELECT count(*) FROM picked)::int AS picked,
             COALESCE((SELECT json_agg(json_build_object('id', id, 'task', task, 'queue', queue)) FROM cancelled), '[]') AS jobs,
             (SELECT count(*) FROM told)::int AS told`,
      (p: CancelBatchParams & { queuedStates: readonly string[] }) => [
        ...cancelBatchValues(p),
        p.queuedStates,
      ],
    ),

    /**
     * Cancels up to `limit` running jobs matching the filter (their active attempts, as `cancelJob`
     * does). An attempt that ends meanwhile keeps its ending.
     */
    cancelRunningJobs: sqlStatement(
      `
      WITH picked AS (
        SELECT id FROM ${s}."jobHistory" h
        WHERE h.state = 'active' AND ${filterSql(s, 'h', 'jobHistory', 3)} LIMIT $2
      ), ${cancelling(`'{}'::uuid[]`, 'ARRAY(SELECT id FROM picked)', '$1')}
      SELECT (SELECT count(*) FROM picked)::int AS picked,
             COALESCE((SELECT json_agg(json_build_object('id', id, 'task', task, 'queue', queue)) FROM cancelled), '[]') AS jobs,
             (SELECT count(*) FROM told)::int AS told`,
      cancelBatchValues,
    ),

    /**
     * Queues again, due now, up to `limit` jobs that ended for good in one of `states` (ended at
     * or before `endedAtOrBefore`, the time a bulk call began, so that a job failing again meanwhile is
     * not picked twice), or only job `id`. The attempt counter goes on from the last attempt (it
     * is the fencing token of every write that ends an attempt, so it must never repeat) and
     * `maxRetries` is set so that the job gets one attempt with no automatic retry: a retry from
     * outside is a single, watched try. The history rows are locked, so two simultaneous retries of one job queue it
     * once: the second waits, then conflicts with the first one's row (`ON CONFLICT`), or finds the
     * job claimed by then (no longer in a state it retries).
     */
    retryJobs: sqlStatement(
      `
      WITH picked AS (
        SELECT h.id FROM ${s}."jobHistory" h
        WHERE h.state = ANY($3::text[]) AND h."completedAt" IS NOT NULL
          AND ($4::timestamptz IS NULL OR h."completedAt" <= $4) AND ($5::uuid IS NULL OR h.id = $5)
          AND ${filterSql(s, 'h', 'jobHistory', 8)} AND ${notQueuedAgain(s, 'h')}
        LIMIT $2
        FOR UPDATE
      ), requeued AS (
        INSERT INTO ${s}.jobs (id, task, payload, priority, retries, "maxRetries", "isScheduled",
                               "createdBy", "createdAt", queue, "groupKey", "inFlow")
        SELECT id, task, payload, priority, attempt, attempt, "wasScheduled", $1, "createdAt", queue,
               "groupKey", "inFlow"
        FROM ${s}."jobHistory" WHERE id = ANY(ARRAY(SELECT id FROM picked))
        ON CONFLICT (id) DO NOTHING
        RETURNING id, task, queue
      ), woken AS (
        SELECT pg_notify($6, $7) WHERE EXISTS (SELECT 1 FROM requeued)
      )
      SELECT (SELECT count(*) FROM picked)::int AS picked,
             COALESCE((SELECT json_agg(json_build_object('id', id, 'task', task, 'queue', queue)) FROM requeued), '[]') AS jobs,
             (SELECT count(*) FROM woken)::int AS woken`,
      (p: {
        /** Every job, for `retryJob`. */
        filter?: FilterValues;
        /** The instance that queues them again. */
        createdBy: string;
        limit: number;
        states: readonly string[];
        /** Only jobs that ended at or before this time (a bulk call's start). */
        endedAtOrBefore?: Date;
        id?: string;
        channel: string;
        /** The `newJob` notification. */
        notification: string;
      }) => [
        p.createdBy,
        p.limit,
        p.states,
        p.endedAtOrBefore ?? null,
        p.id ?? null,
        p.channel,
        p.notification,
        ...filterValues(p.filter ?? ANY_JOB),
      ],
    ),

    /**
     * Makes job $1 due now if it is pending and not due yet (a later `waitUntil`, a retry's
     * backoff, a snooze), and wakes the instances ($2 channel, $3 the `newJob` notification). Not
     * a blocked flow job nor a suspended one: what they wait for is not a time to skip. Safe
     * against a claim as `awaitJob`'s update is (see there).
     */
    runJobNow: `
      WITH due AS (
        UPDATE ${s}.jobs j SET "waitUntil" = now()
        WHERE id = $1 AND "waitUntil" > now() AND ${queuedJobState('j')} = 'pending'
        RETURNING id
      ), woken AS (
        SELECT pg_notify($2, $3) FROM due
      )
      SELECT (SELECT count(*) FROM due)::int AS due, (SELECT count(*) FROM woken)::int AS woken`,

    /** The database's clock: the bound of a bulk call's batches. */
    now: `SELECT now() AS now`,

    /**
     * Makes job $1's end worth a notification (`awaited`), wherever the job is, and says where that
     * is, in one statement: queued (`queued` is its flag as it was), running (`state` active), ended
     * (`state` and `error`: nothing will notify, the caller settles at once), or nowhere (all null).
     * `marked` is how many rows the flag was set on: 0 while the snapshot saw it unset means the
     * job moved between the snapshot and the update (claimed, cancelled, ended), and the caller
     * runs the statement again.
     *
     * Updating a queued row is safe against a claim (see the claim's comment on ctids in
     * runner/claim.sql.ts): the update takes the row's lock. If a claim holds it, the update waits, then
     * finds the row deleted (the job is running by then: the statement runs again). If the update
     * holds it, the claim's SKIP LOCKED passes the row by. If the update committed after the claim's
     * snapshot but before its lock, the claim locks the new row version but deletes by the old one's
     * ctid, which matches nothing: the row stays queued, for the next claim. No row is ever claimed
     * twice or lost, and an already flagged row is not written at all. A due row it flagged wakes
     * the instances ($2 channel, $3 the `newJob` notification), as an enqueue does: a claim that
     * passed it by claims again, rather than leave it to the next `pollingCheck`. `woken` is read
     * only so that its CTE runs: PostgreSQL skips a CTE without writes that nothing reads.
     *
     * $1 id, $2 channel, $3 notification
     */
    awaitJob: `
      WITH queued AS (
        SELECT awaited FROM ${s}.jobs WHERE id = $1
      ), ran AS (
        SELECT h.state, h.awaited, h."lastErrorMessage" AS error, h.result::text AS result
        FROM ${s}."jobHistory" h WHERE h.id = $1
      ), "markedQueued" AS (
        UPDATE ${s}.jobs SET awaited = true WHERE id = $1 AND NOT awaited RETURNING id, "waitUntil"
      ), woken AS (
        SELECT pg_notify($2, $3) FROM "markedQueued" WHERE "waitUntil" <= now()
      ), "markedRunning" AS (
        UPDATE ${s}."jobHistory" SET awaited = true
        WHERE id = $1 AND state = 'active' AND NOT awaited RETURNING id
      )
      SELECT (SELECT awaited FROM queued) AS queued, (SELECT state FROM ran) AS state,
             (SELECT awaited FROM ran) AS "awaitedRunning", (SELECT error FROM ran) AS error,
             (SELECT result FROM ran) AS result,
             (SELECT count(*) FROM "markedQueued")::int + (SELECT count(*) FROM "markedRunning")::int
               AS marked, (SELECT count(*) FROM woken)::int AS woken`,

    /**
     * The awaited jobs among $1 that have ended for good: what a missed notification would have
     * said, and what none says, a completed job's result (as JSON text, so that SQL NULL, a task
     * that returned nothing, stays apart from a JSON null).
     */
    endedJobs: `
      SELECT h.id, h.state, h."lastErrorMessage" AS error, h.result::text AS result
      FROM ${s}."jobHistory" h
      WHERE h.id = ANY($1::uuid[]) AND h.state <> 'active'
        AND NOT EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.id = h.id)`,
  };
}

export type QueueSql = ReturnType<typeof queueSql>;
