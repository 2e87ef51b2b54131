import type { AttemptJob } from '../attempt/attempt-job.js';
import { preparedStatement } from '../database/sql-statement.js';
import type { SchemaName } from '../database/schema-name.js';
import type { SkipReason } from '../events/job-event.interface.js';
import type { TraceCarrier } from '../telemetry/jobs-telemetry.js';

/** A claimed job, as the runner holds it while the attempt runs. */
export interface ClaimedJob extends AttemptJob {
  readonly priority: number;
  /** Where its enqueue was traced; `null` without telemetry. */
  readonly traceContext: TraceCarrier | null;
  /** Its task's queue on this instance, which the claim recorded in history. */
  readonly queue: string;
  /**
   * The claim's fencing token (a bigint, as text): the "seq" of the queued row it took, which no
   * other claim of any job ever has. Every write that ends the attempt names it with the attempt
   * number, which alone a snooze reuses.
   */
  readonly claim: string;
  /** It belongs to a flow (`addFlow`): only a flow job has dependencies to read. */
  readonly inFlow: boolean;
  /** It was suspended (`ctx.sleep`, `ctx.waitForEvent`): this run resumes it. */
  readonly resumed: boolean;
}

/** A row of the claim: a claimed job, or a cron job the claim took out of the queue as skipped. */
export interface ClaimRow extends ClaimedJob {
  /** Recorded `skipped` by the claim itself: it is not to be run. */
  readonly skipped: boolean;
  readonly skipReason: SkipReason | null;
}

/**
 * A row of a limited queue's claim: a claimed job with what the claim found of the queue's limits,
 * or, when it claimed nothing, those alone (`id` null).
 */
export type LimitedClaimRow = (ClaimRow | { readonly id: null }) & {
  /**
   * The queue's cluster-wide limits held this claim back (its allowance was below the limit asked
   * for, or a group was at its `groupConcurrency`): it may have more jobs due once one ends.
   */
  readonly heldBack: boolean;
  /** Seconds until the oldest start in the rate window leaves it; null without a `rateLimit`. */
  readonly rateFreesIn: number | null;
  /** The group-fair walk stopped at its bound: claiming again may find more. */
  readonly cut: boolean;
};

/** The parameters of `claim`. */
export interface ClaimParams {
  /** How many jobs to claim at most. */
  readonly limit: number;
  /** The claiming instance. */
  readonly executedBy: string;
  readonly tasks: readonly string[];
  /** The queue of each task on the claiming instance, in the order of `tasks`. */
  readonly queues: readonly string[];
}

/** The parameters of a limited queue's claim (`claimLimited`, `claimLimitedByGroup`). */
export interface LimitedClaimParams {
  /** How many jobs to claim at most, before the queue's cluster-wide limits. */
  readonly limit: number;
  /** The claiming instance. */
  readonly executedBy: string;
  /** The queue's tasks. */
  readonly tasks: readonly string[];
  readonly queue: string;
  readonly globalConcurrency?: number;
  readonly rateLimit?: { readonly limit: number; readonly periodSeconds: number };
  /** `claimLimitedByGroup`'s limit per group (`claimLimited` has none). */
  readonly groupConcurrency?: number;
}

/** How many rows a group-fair claim walks at most, per job it may claim. */
const GROUP_WALK_FACTOR = 10;
/** The walk's bound in SQL: none when the queue's limits allow nothing. */
const GROUP_WALK_BOUND = `sign(n)::int * $1::int * ${GROUP_WALK_FACTOR}`;

/**
 * The claims: each takes due jobs out of the queue and records them in history, `active` or
 * `skipped` (a cron slot missed, or an overlap), in one statement.
 */
export function claimSql({ quoted: s, name: schemaName }: SchemaName) {
  /**
   * Why the claimed job `c` is not to be started at `at` (the claim's start time), or NULL (see
   * `SkipReason`):
   * - 'missed': not started by its "startBy" (the slot plus its schedule's grace), and, under
   *   'runOnce', not the latest missed slot of its schedule;
   * - 'overlap': its schedule (named by "overlapSchedule", set only under `overlap: 'skip'`) has a
   *   later slot due too (a backlog: the latest due slot is the one that may start, which keeps
   *   two slots of one claim from both starting, and two simultaneous claims too unless a slot
   *   falls due between their starts), or a run that is active, on any instance, in this
   *   statement's snapshot.
   * Cheap for every other job ("startBy" is NULL): the CASE stops there. Evaluated once per row,
   * in the claim's RETURNING, not in a CTE of its own, which would copy every claimed row (payloads
   * included) once more, nor at each of its uses, which would plan it once per use (see "What made
   * the hot path fast" in docs/performance.md).
   *
   * Scalar subqueries with LIMIT, not EXISTS: PostgreSQL may plan an EXISTS here as one hashed
   * anti-join over every slot row of every schedule, built by each claim that has a missed job; a
   * scalar subquery stays a per-row look-up on the slot indexes (asserted in test/runner/claim-plan.spec.ts).
   * The active run is found from the active attempts (job_history_active: as many rows as the
   * cluster runs jobs), each looked up by its slot row, not from the schedule's slots, of which an
   * every-second schedule keeps thousands.
   */
  const skipReason = (c: string, at: string) => `CASE
          WHEN ${c}."startBy" IS NULL THEN NULL
          WHEN ${c}."startBy" < ${at} AND COALESCE((
            SELECT sc."missedSlots" <> 'runOnce' OR (
              -- Both bounds on slot: an index range, left at the first row found.
              SELECT true FROM ${s}."jobScheduleSlot" later
              WHERE later.schedule = p.schedule AND later.slot > p.slot
                AND later.slot < ${at} - make_interval(secs => sc."missedSlotGrace")
              LIMIT 1) IS NOT NULL
            FROM ${s}."jobScheduleSlot" p JOIN ${s}."jobSchedule" sc ON sc.name = p.schedule
            WHERE p."jobId" = ${c}.id
            -- No slot row (pruned, or a job inserted by hand) cannot be the latest: skipped.
            LIMIT 1), true) THEN 'missed'
          WHEN ${c}."overlapSchedule" IS NULL THEN NULL
          -- A job's "waitUntil" is its slot: a later slot row at or before now is due.
          WHEN (SELECT true FROM ${s}."jobScheduleSlot" later
                WHERE later.schedule = ${c}."overlapSchedule" AND later.slot > ${c}."waitUntil"
                  AND later.slot <= ${at}
                LIMIT 1) IS NOT NULL
            -- A run of the schedule runs its task: the task filter spares the slot look-ups of
            -- other tasks' attempts.
            OR (SELECT true FROM ${s}."jobHistory" h
                WHERE h.state = 'active' AND h.task = ${c}.task
                  AND (SELECT a.schedule FROM ${s}."jobScheduleSlot" a WHERE a."jobId" = h.id LIMIT 1)
                      = ${c}."overlapSchedule"
                LIMIT 1) IS NOT NULL THEN 'overlap'
        END`;
  /**
   * The claim (see `claim`) of the jobs `pick` selects and locks (their ctids): deleted from the
   * queue and recorded in history, `active` or `skipped`, with `queue` (the claiming instance's
   * queue of the job's task) and `at` as their start time; `before`: CTEs `pick` reads.
   */
  const claimOf = ({
    pick,
    queue,
    at,
    before = '',
  }: {
    pick: string;
    queue: string;
    at: string;
    before?: string;
  }) => `
      WITH ${before} claimed AS (
        -- = ANY(ARRAY(...)), not IN (...): the planner turns IN into a hash join over a sequential
        -- scan of the whole queue; the array is computed once. It holds the rows' ctids, not their
        -- ids: the delete then goes straight to each row instead of down the primary key. A ctid
        -- is stable here: the rows are locked from the moment it is read, and the only updates of
        -- jobs rows (waitForJob's "awaited" flag, migration 6's one-off backfill) leave a row they
        -- race with for the next claim (see job-queue.sql.ts, awaitJob).
        DELETE FROM ${s}.jobs c
        WHERE ctid = ANY(ARRAY(${pick}
        ))
        -- Judged once per row, here: the history row, the queue's state and the reply all read it
        -- (the expression planned and evaluated once, not once per use).
        RETURNING *, ${skipReason('c', at)} AS "skipReason"
      ), started AS (
        INSERT INTO ${s}."jobHistory" AS h (id, task, state, payload, priority, attempt, "maxRetries",
                                             "wasScheduled", awaited, "executedBy", "lastErrorMessage",
                                             "createdAt", "startedAt", "completedAt", "traceContext",
                                             queue, "groupKey", "claimToken", "inFlow", "uniqueKey")
        -- A skipped job never started: its attempt stays at the retries it had (0), and it ends now.
        SELECT id, task, CASE WHEN skipped THEN 'skipped' ELSE 'active' END, payload, priority,
               retries + CASE WHEN skipped THEN 0 ELSE 1 END, "maxRetries", "isScheduled", awaited, $2,
               CASE "skipReason"
                 WHEN 'missed' THEN 'Missed its cron slot: not started by '
                   || to_char("startBy" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                   || ' (the slot + missedSlotGrace).'
                 WHEN 'overlap' THEN 'Not started: schedule "' || "overlapSchedule"
                   || '" had a run active or a later slot due (overlap: ''skip'').'
               END,
               "createdAt", CASE WHEN skipped THEN NULL ELSE ${at} END, CASE WHEN skipped THEN ${at} END,
               "traceContext", ${queue}, "groupKey", seq, "inFlow", "uniqueKey"
        FROM claimed c, LATERAL (SELECT c."skipReason" IS NOT NULL AS skipped) k
        ON CONFLICT (id) DO UPDATE SET
          state = EXCLUDED.state, attempt = EXCLUDED.attempt, "maxRetries" = EXCLUDED."maxRetries",
          "executedBy" = EXCLUDED."executedBy", "startedAt" = EXCLUDED."startedAt",
          "completedAt" = EXCLUDED."completedAt",
          "lastErrorMessage" = COALESCE(EXCLUDED."lastErrorMessage", h."lastErrorMessage"),
          queue = EXCLUDED.queue, "groupKey" = EXCLUDED."groupKey",
          "claimToken" = EXCLUDED."claimToken",
          -- The key is the queued row's only until its first claim (it frees itself then): a later
          -- claim's row has none, and history keeps the first one's for the job's whole life.
          "uniqueKey" = COALESCE(EXCLUDED."uniqueKey", h."uniqueKey"),
          -- Someone may have started awaiting the job while it was queued again (retried, snoozed,
          -- requeued): its end is then worth a notification.
          awaited = h.awaited OR EXCLUDED.awaited, "updatedAt" = now()
      )`;
  /** What a claim returns of each claimed job `c` (see `ClaimRow`). */
  const claimedColumns = (queue: string) =>
    `c.id, c.task, c.payload, c.priority, c.retries + 1 AS attempt, c."maxRetries", c."traceContext",
     c."skipReason" IS NOT NULL AS skipped, c."skipReason", ${queue} AS queue, c.seq AS claim,
     c."inFlow" IS TRUE AS "inFlow", c."waitingFor" IS NOT NULL AS resumed`;
  /**
   * A limited queue's claim (see `claimLimited`) around `pick`, with the CTEs `walk` it reads, the
   * `cut` it reports, and whether a group's limit held it back (`groupBound`).
   */
  const limitedClaim = (pick: string, walk = '', cut = 'false', groupBound = 'false') => {
    const at = '(SELECT "lockedAt" FROM allowance)';
    return `${claimOf({
      before: `
      allowance AS MATERIALIZED (
        SELECT l.*,
               GREATEST(0, LEAST($1::int, COALESCE($6::int - l.active, $1::int),
                                 COALESCE($7::int - l.started, $1::int))) AS n,
               ARRAY(SELECT g.key FROM jsonb_each_text(l."activeByGroup") g
                     WHERE g.value::int >= ${walk ? '$9::int' : 'NULL::int'}) AS "fullGroups"
        FROM ${s}."claimQueueLoad"($4::text,
                                   hashtextextended('nestjs-pg-jobs:queue:' || $5::text || ':' || $4::text, 0),
                                   $8::float8) l
      ), ${walk}`,
      pick,
      queue: '$4::text',
      at,
    })}, recorded AS (
        -- The queue's state for its next claim: the attempts still active plus those started now,
        -- and, rate-limited, the window's starts plus this claim's. An upsert: the row may have been
        -- written after this statement's snapshot (by the previous holder of the lock), and is
        -- replaced, never read here.
        INSERT INTO ${s}.queues AS q (name, "activeIds", "activeAttempts", "activeGroups",
                                      "startTimes", "startCounts")
        SELECT $4::text, a."activeIds" || s.ids, a."activeAttempts" || s.attempts,
               a."activeGroups" || s.groups,
               CASE WHEN $7::int IS NULL OR s.n = 0 THEN a."startTimes" ELSE a."startTimes" || a."lockedAt" END,
               CASE WHEN $7::int IS NULL OR s.n = 0 THEN a."startCounts" ELSE a."startCounts" || s.n END
        FROM allowance a,
             (SELECT coalesce(array_agg(c.id), '{}') AS ids,
                     coalesce(array_agg(c.retries + 1), '{}') AS attempts,
                     coalesce(array_agg(c."groupKey"), '{}') AS groups, count(*)::int AS n
              FROM claimed c WHERE c."skipReason" IS NULL) s
        ON CONFLICT (name) DO UPDATE SET
          "activeIds" = EXCLUDED."activeIds", "activeAttempts" = EXCLUDED."activeAttempts",
          "activeGroups" = EXCLUDED."activeGroups", "startTimes" = EXCLUDED."startTimes",
          "startCounts" = EXCLUDED."startCounts"
      )
      SELECT ${claimedColumns('$4::text')}, a.n < $1::int OR ${groupBound} AS "heldBack",
             extract(epoch FROM COALESCE(a."firstStart", a."lockedAt") + make_interval(secs => $8::float8)
                                - a."lockedAt")::float8 AS "rateFreesIn",
             ${cut} AS cut
      FROM allowance a LEFT JOIN claimed c ON true
      ORDER BY c.priority DESC, c."waitUntil", c.seq`;
  };
  /** `limitedClaim`'s $1-$8; the schema's name ($5) keys the queue's advisory lock. */
  const limitedClaimValues = (p: LimitedClaimParams) => [
    p.limit,
    p.executedBy,
    p.tasks,
    p.queue,
    schemaName,
    p.globalConcurrency ?? null,
    p.rateLimit?.limit ?? null,
    p.rateLimit?.periodSeconds ?? null,
  ];
  return {
    /**
     * Claims up to `limit` due jobs of `tasks` and records them active, atomically: one statement
     * is one transaction, so a claim that fails leaves no history row saying the job started, and
     * `SKIP LOCKED` lets instances claim side by side without waiting on each other.
     *
     * The claim is also where a cron slot is judged missed, so that no instance can start a job
     * after its `startBy` (its slot + its schedule's `missedSlotGrace`, set by the planner), however
     * the job got late: every instance down, a boot racing another's planning, a busy queue. The
     * time it is judged by is the one `startedAt` records: a job that started did so in time. A
     * missed job is taken out like any other and recorded `skipped` instead of `active`, and the
     * runner does not run it; it counts against the limit, so a claim of only missed jobs still
     * comes back full and the runner claims again. For a `runOnce` schedule a missed job still runs
     * when no later slot of its schedule is missed too: the latest missed slot is the catch-up.
     * Jobs without `startBy` (not cron, or a cron job that already started once: retries and
     * requeues do not carry it) never reach the subqueries: `CASE` evaluates them only for jobs
     * past their deadline, and for jobs of `overlap: 'skip'` schedules. Such a job is skipped too
     * when its schedule has a run active or a later slot due (see `skipReason`).
     *
     * History records each job's queue (`queues`).
     */
    claim: preparedStatement(
      `
      ${claimOf({
        pick: `
          SELECT ctid FROM ${s}.jobs
          -- The task filter is wrapped in CASE so that the planner cannot estimate it: a plain
          -- task = ANY(...) on a table whose statistics predate the burst being claimed (or that
          -- was never analysed) is estimated at a handful of rows, and the planner then sorts the
          -- whole queue instead of walking jobs_claim_order, for every claim. Opaque, it is taken
          -- as matching half the rows, and the index walk that stops at $1 rows always wins.
          WHERE "waitUntil" <= now() AND CASE WHEN task = ANY($3::text[]) THEN true END
          ORDER BY priority DESC, "waitUntil", seq
          -- The limit is a subquery so that no plan knows it: the planner takes an unknown limit
          -- for a tenth of the rows, and a generic plan, which cannot know $1, was then estimated
          -- dearer than each run's own plan on a queue of some 20,000 jobs or more (or of 10,000
          -- that a flow's release left with as many dead rows), and every claim was planned again.
          -- Each plan now costs the same: after its first five runs a connection keeps one
          -- (test/runner/claim-plan-cache.spec.ts).
          LIMIT (SELECT $1::int)
          FOR UPDATE SKIP LOCKED`,
        queue: '($4::text[])[array_position($3::text[], c.task)]',
        at: 'now()',
      })}
      SELECT ${claimedColumns('($4::text[])[array_position($3::text[], c.task)]')}
      FROM claimed c
      ORDER BY priority DESC, "waitUntil", seq`,
      (p: ClaimParams) => [p.limit, p.executedBy, p.tasks, p.queues],
    ),

    /**
     * Claims up to `limit` due jobs of the tasks of `queue`, within what the queue's cluster-wide
     * limits allow, and records them active (the claim above, with the queue's limits):
     * - claims of one queue are serialised across the cluster by a transaction-scoped advisory
     *   lock on the queue, taken in `claimQueueLoad` (migration 10), which reads the queue's state
     *   (its attempts still active, per group, and its starts in the rate window) with a snapshot
     *   taken after the lock: every claim of the queue that committed before is counted;
     * - the allowance is `limit` bounded by `globalConcurrency` minus the active attempts and by
     *   `rateLimit` minus the starts in the window; jobs beyond it stay queued;
     * - the claim writes the queue's state back with what it started, at the lock's clock, which
     *   is also the "startedAt" of its jobs (the window is judged on what history shows).
     * Other queues never wait for it: the lock is the queue's, and its jobs are found by task.
     */
    claimLimited: preparedStatement(
      limitedClaim(`
          SELECT ctid FROM ${s}.jobs
          WHERE "waitUntil" <= now() AND CASE WHEN task = ANY($3::text[]) THEN true END
          ORDER BY priority DESC, "waitUntil", seq
          LIMIT (SELECT n FROM allowance)
          FOR UPDATE SKIP LOCKED`),
      limitedClaimValues,
    ),

    /**
     * `claimLimited` for a queue with `groupConcurrency`: at most that many active jobs per
     * "groupKey", across the cluster. The claim walks the queue in claim order, leaving out the
     * groups already at their limit, up to a bound (ten times `limit`), ranks each group's jobs and
     * takes at most `groupConcurrency` minus its active ones; so one group's backlog, however long,
     * costs a walk past its jobs but never holds back another group's. A walk that hit its bound says so (`cut`): the
     * next claim leaves out the groups this one filled, and finds what lies behind them. The rows
     * are locked once chosen (the queue's lock keeps other claims of it away meanwhile).
     */
    claimLimitedByGroup: preparedStatement(
      limitedClaim(
        `
          SELECT ctid FROM ${s}.jobs
          WHERE ctid = ANY(ARRAY(SELECT ctid FROM picked))
          FOR UPDATE SKIP LOCKED`,
        `
      walked AS MATERIALIZED (
        SELECT ctid, "groupKey", priority, "waitUntil", seq FROM ${s}.jobs
        WHERE "waitUntil" <= now() AND CASE WHEN task = ANY($3::text[]) THEN true END
          AND ("groupKey" IS NULL OR "groupKey" <> ALL((SELECT "fullGroups" FROM allowance)::text[]))
        ORDER BY priority DESC, "waitUntil", seq
        LIMIT (SELECT ${GROUP_WALK_BOUND} FROM allowance)
      ), picked AS (
        SELECT r.ctid FROM (
          SELECT w.*, row_number() OVER (PARTITION BY w."groupKey"
                                         ORDER BY w.priority DESC, w."waitUntil", w.seq) AS rank
          FROM walked w) r
        WHERE r."groupKey" IS NULL
           OR r.rank <= $9::int - COALESCE(((SELECT "activeByGroup" FROM allowance) ->> r."groupKey")::int, 0)
        ORDER BY r.priority DESC, r."waitUntil", r.seq
        LIMIT (SELECT n FROM allowance)
      ),`,
        `(SELECT count(*) FROM walked) = (SELECT ${GROUP_WALK_BOUND} FROM allowance)`,
        `cardinality((SELECT "fullGroups" FROM allowance)) > 0
               OR (SELECT count(*) FROM walked) > (SELECT count(*) FROM picked)`,
      ),
      (p: LimitedClaimParams) => [...limitedClaimValues(p), p.groupConcurrency],
    ),
  };
}
