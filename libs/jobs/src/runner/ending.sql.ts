import {
  SNOOZED_JOB_COLUMNS,
  snoozedAttempt,
  snoozedJobValues,
} from '../common/snoozed-attempt.js';
import { recordedAttempt } from '../common/recorded-attempt.js';
import { preparedStatement, sqlStatement } from '../database/sql-statement.js';
import type { SchemaName } from '../database/schema-name.js';
import type { ClaimedJob } from './claim.sql.js';

/**
 * `'active'`, as a value the planner cannot read when it plans: a statement that finds a batch of
 * attempts by id (`complete`, `release`) then looks each one up by primary key. Written as the
 * literal, the condition lets the planner prove the partial index of active attempts
 * (job_history_active) usable, and the generic plan a prepared statement settles on walks all of
 * it instead: an entry per attempt that ended since the last vacuum, many thousands on a busy queue
 * and more under a held-back vacuum horizon, for every batch (`test/runner/completion-plan.spec.ts`).
 */
const ACTIVE_UNSEEN = `(SELECT 'active'::text)`;

/**
 * The SET of a write that counts `n` more of blocked job `j`'s dependencies ended: it is due when
 * none is left, at its own "waitUntil" if later.
 */
const endedDependencies = (n: string) => `"blockedBy" = j."blockedBy" - ${n},
            "waitUntil" = CASE WHEN j."blockedBy" <= ${n} THEN GREATEST(now(), j."blockedWaitUntil")
                               ELSE j."waitUntil" END`;

/** What fences a write to one attempt: its job, its number and its claim. */
type AttemptFence = Pick<ClaimedJob, 'id' | 'attempt' | 'claim'>;

/** Attempts a statement names, each by its claimed job (a `RunningAttempt`, a completion). */
type Attempts = readonly { readonly job: AttemptFence }[];

/** The fence of `attempts`, as the three arrays a statement unnests (id, attempt, claim). */
const idsOf = (attempts: Attempts) => attempts.map((a) => a.job.id);
const numbersOf = (attempts: Attempts) => attempts.map((a) => a.job.attempt);
const claimsOf = (attempts: Attempts) => attempts.map((a) => a.job.claim);

/**
 * The writes that end an attempt (complete, fail, snooze, progress) or give it back (release,
 * requeue orphans), and the look-up of the cancelled ones. Each is one round trip, and every write
 * that ends an attempt is fenced by `(id, attempt, "claimToken", state = 'active')`: a write for an attempt that is no longer the
 * job's current, active one (a reaper requeued it, shutdown released it, it snoozed and was claimed
 * again, by this instance or another) matches nothing and changes nothing. The token because a
 * snooze reuses the attempt number: a repeat of an ending whose answer was lost would match the
 * next claim of the job, even on the same instance. The attempt number too because an instance of
 * a version before migration 12 claims without writing a token, leaving the previous claim's.
 */
export function endingSql({ quoted: s }: SchemaName) {
  /**
   * Ends the active attempts `selection` picks (a FROM/WHERE over history as h) as interrupted and
   * queues their jobs again with the attempt unconsumed, created by the instance that gave them
   * back. `reason` is the parameter of the message history keeps. The next claim overwrites the
   * history row, so each attempt given back is also kept in `jobAttempt` (`interrupted`).
   */
  const giveBack = (selection: string, reason: string) => `
      WITH released AS (
        UPDATE ${s}."jobHistory" h
        SET state = 'interrupted', "lastErrorMessage" = ${reason}, "updatedAt" = now()
        ${selection}
        RETURNING h.*
      ), ${recordedAttempt(s, { name: 'recorded', ended: 'released', outcome: 'interrupted' })}
      INSERT INTO ${s}.jobs (id, task, payload, priority, retries, "maxRetries", "isScheduled", awaited,
                             "createdBy", "createdAt", "traceContext", queue, "groupKey", "inFlow")
      SELECT id, task, payload, priority, attempt - 1, "maxRetries", "wasScheduled", awaited,
             "executedBy", "createdAt", "traceContext", queue, "groupKey", "inFlow"
      FROM released
      RETURNING id`;
  return {
    /**
     * Records a batch of successful attempts in one statement (one commit for many jobs: commits,
     * not statements, are what a busy queue waits on), each with its result: JSON text, or NULL
     * for a task that returned nothing (most: no JSON work, a NULL in the array). Returns the ids
     * that were still active; the others were fenced out. A result never travels in the
     * notification: whoever waits reads it from history; nor does an error (an earlier attempt's,
     * of any length), which keeps the notification a few dozen bytes.
     */
    complete: completeStatement(s, ''),

    /**
     * `complete` for a batch with flow jobs, which also counts their endings against their
     * dependents, in the same statement and so behind the same fence: each dependent still blocked
     * counts as many dependencies fewer as the batch ended of its own, and is due when none is left
     * (at its own "waitUntil" if later), notified with `newJob`. One write per dependent per batch,
     * where an ending's trigger made one per ending: a fan-in of 10,000 jobs would otherwise update
     * its sink's row 10,000 times. A completion never cancels a dependent, so this is all it does;
     * the other endings are the `flowJobEnded` trigger's (migration 14).
     *
     * A batch that ended one flow job (a fan-out's source, as a rule: it runs alone) takes one
     * dependency off each dependent, as an edge joins two jobs once: no count per dependent and no
     * join, ~20 of the ~100 ms that released 9,998 dependents with them (psql, analysed tables).
     * Either way the dependents are reached by the array of their ids, whatever the planner guesses
     * of `counted`, and written in the primary key's order (or the table's, by a bitmap scan), both
     * their claim order for the jobs of one `addFlow` (`newJobId`): each released row's new version
     * goes where the last one went, so that a claim of fifty reads and dirties a page or two, not
     * fifty (test/flows/flow-release-layout.spec.ts).
     */
    completeInFlow: completeStatement(
      s,
      `, counted AS (
        UPDATE ${s}."jobDependency" d SET ended = true
        WHERE d."dependsOn" = ANY(ARRAY(SELECT id FROM done WHERE "inFlow")) AND NOT d.ended
        RETURNING d."jobId"
      ), released_by_one AS (
        UPDATE ${s}.jobs j SET ${endedDependencies('1')}
        WHERE (SELECT count(*) FROM done WHERE "inFlow") = 1
          AND j.id = ANY(ARRAY(SELECT "jobId" FROM counted)) AND j."blockedBy" > 0
        RETURNING j."waitUntil"
      ), released_by_count AS (
        UPDATE ${s}.jobs j SET ${endedDependencies('c.n')}
        FROM (SELECT "jobId", count(*)::int AS n FROM counted GROUP BY "jobId" ORDER BY "jobId") c
        WHERE (SELECT count(*) FROM done WHERE "inFlow") > 1
          AND j.id = ANY(ARRAY(SELECT "jobId" FROM counted)) AND j.id = c."jobId" AND j."blockedBy" > 0
        RETURNING j."waitUntil"
      ), woken AS (
        SELECT pg_notify($2, '{"event":"newJob"}')
        WHERE EXISTS (SELECT 1 FROM released_by_one WHERE "waitUntil" <= now())
           OR EXISTS (SELECT 1 FROM released_by_count WHERE "waitUntil" <= now())
      )`,
      `, (SELECT count(*) FROM woken) AS woke`,
    ),

    /**
     * Records a failed attempt and, while retries remain and the task did not `giveUp`, puts the
     * job back after the task's own `delay` (from its `backoff`) or the default backoff:
     * `2^(attempt-1) * retryBackoff` seconds, at most `maxRetryDelay`. The exponent is capped
     * before the power is taken: with many retries the power alone overflows, and the failure could
     * not be written at all. Only the final failure is worth telling a waiting caller, with
     * `notification`, built by the caller (`endNotification`: its error cut to fit a notification).
     * The failure is also kept in "jobAttempt" (`failed`, a `giveUp` too), with $12, its stack,
     * since the next claim overwrites the history row. A write repeated after a lost answer finds
     * no active row to fail, so an attempt is recorded once.
     */
    fail: preparedStatement(
      `
      WITH failed AS (
        UPDATE ${s}."jobHistory"
        SET state = 'failed', "lastErrorMessage" = $4, "completedAt" = now(), "updatedAt" = now()
        WHERE id = $1 AND attempt = $3 AND "claimToken" = $11 AND state = 'active'
        RETURNING *
      ), ${recordedAttempt(s, { name: 'recorded', ended: 'failed', outcome: 'failed', stack: '$12::text' })}, retried AS (
        INSERT INTO ${s}.jobs (id, task, payload, priority, "waitUntil", retries, "maxRetries",
                               "isScheduled", awaited, "createdBy", "createdAt", "traceContext", queue,
                               "groupKey", "inFlow")
        SELECT id, task, payload, priority,
               now() + make_interval(secs => COALESCE($8::float8,
                                                      LEAST(power(2, LEAST(attempt - 1, 60)) * $5, $7))),
               attempt, "maxRetries", "wasScheduled", awaited, $6, "createdAt", "traceContext", queue, "groupKey",
               "inFlow"
        FROM failed WHERE attempt <= "maxRetries" AND NOT $9::bool
        RETURNING id
      )
      SELECT id, (SELECT count(*) FROM retried) > 0 AS retried,
             (SELECT count(*) FROM (SELECT pg_notify($2, $10) FROM failed
                                    WHERE awaited AND NOT EXISTS (SELECT 1 FROM retried)) n) AS told
      FROM failed`,
      (
        p: AttemptFence & {
          channel: string;
          error: string;
          retryBackoff: number;
          requeuedBy: string;
          maxRetryDelay: number;
          /** Seconds until the retry; none: the default backoff. */
          delay?: number;
          giveUp: boolean;
          notification: string;
          /** The error's stack, cut (`storableText`), or null. */
          stack: string | null;
        },
      ) => [
        p.id,
        p.channel,
        p.attempt,
        p.error,
        p.retryBackoff,
        p.requeuedBy,
        p.maxRetryDelay,
        p.delay ?? null,
        p.giveUp,
        p.notification,
        p.claim,
        p.stack,
      ],
    ),

    /**
     * Ends an attempt whose task asked to run later (`ctx.snooze`): history says `snoozed` (with
     * "completedAt", as every write that ends an attempt sets it: the dashboard counts the jobs
     * waiting out a snooze through job_history_state_ended_at) and the job is queued again, due in
     * `seconds`, with the retries it had, so the next attempt has the same number. Fenced like
     * every ending, by its claim: the attempt number is reused, so a repeat of this write (its
     * first answer lost) must not snooze the next claim of the job, whichever instance made it.
     */
    snooze: preparedStatement(
      `
      WITH ${snoozedAttempt(s, '$5')}
      INSERT INTO ${s}.jobs (${SNOOZED_JOB_COLUMNS})
      SELECT ${snoozedJobValues('now() + make_interval(secs => $3::float8)', '$4')}
      FROM snoozed
      RETURNING id`,
      (p: AttemptFence & { seconds: number; requeuedBy: string }) => [
        p.id,
        p.attempt,
        p.seconds,
        p.requeuedBy,
        p.claim,
      ],
    ),

    /**
     * Writes an active attempt's progress (JSON text) and tells every instance (`notification`,
     * built by the caller: it carries the value only when small enough for a notification). Fenced:
     * a late write of an attempt that ended changes nothing.
     */
    progress: preparedStatement(
      `
      WITH written AS (
        UPDATE ${s}."jobHistory" SET progress = $3::jsonb
        WHERE id = $1 AND attempt = $2 AND "claimToken" = $6 AND state = 'active'
        RETURNING id
      )
      SELECT id, (SELECT count(*) FROM (SELECT pg_notify($4, $5) FROM written) n) AS told
      FROM written`,
      (p: AttemptFence & { progress: string; channel: string; notification: string }) => [
        p.id,
        p.attempt,
        p.progress,
        p.channel,
        p.notification,
        p.claim,
      ],
    ),

    /** The progress an attempt wrote, for listeners whose notification was too small to carry it. */
    progressOf: sqlStatement(
      `SELECT progress::text AS progress FROM ${s}."jobHistory" WHERE id = $1 AND attempt = $2`,
      (p: { id: string; attempt: number }) => [p.id, p.attempt],
    ),

    /**
     * Gives attempts back unconsumed (shutdown): each job is due again at once, with the retries it
     * had, and its history no longer says it is active; `reason` is what history keeps.
     */
    release: sqlStatement(
      giveBack(
        `FROM unnest($1::uuid[], $2::int[], $4::bigint[]) AS r(id, attempt, claim)
       WHERE h.id = r.id AND h.attempt = r.attempt AND h."claimToken" = r.claim
         AND h.state = ${ACTIVE_UNSEEN}`,
        '$3',
      ),
      (p: { attempts: Attempts; reason: string }) => [
        idsOf(p.attempts),
        numbersOf(p.attempts),
        p.reason,
        claimsOf(p.attempts),
      ],
    ),

    /**
     * Gives back, unconsumed, the active attempts of instance `executedBy`'s current life that it
     * is not `running`: those of a claim that committed but whose reply never arrived. Earlier
     * lives' attempts are the reaper's (they ran, so they count as attempts).
     */
    requeueOrphans: sqlStatement(
      giveBack(
        `WHERE h.state = 'active' AND h."executedBy" = $1
         AND h."startedAt" >= (SELECT "startedAt" FROM ${s}.instances WHERE id = $1)
         AND NOT EXISTS (SELECT 1 FROM unnest($2::uuid[], $3::int[], $5::bigint[]) AS r(id, attempt, claim)
                         WHERE r.id = h.id AND r.attempt = h.attempt AND r.claim = h."claimToken")`,
        '$4',
      ),
      (p: { executedBy: string; running: Attempts; reason: string }) => [
        p.executedBy,
        idsOf(p.running),
        numbersOf(p.running),
        p.reason,
        claimsOf(p.running),
      ],
    ),

    /**
     * Which of this instance's `running` attempts a cancel has ended (`cancelJob` records the
     * ending first, then notifies): the poll's backstop for a notification that was lost.
     */
    cancelledAttempts: sqlStatement(
      `
      SELECT h.id, h."claimToken" AS claim
      FROM unnest($1::uuid[], $2::int[], $3::bigint[]) AS r(id, attempt, claim)
      JOIN ${s}."jobHistory" h ON h.id = r.id AND h.attempt = r.attempt AND h."claimToken" = r.claim
      WHERE h.state = 'cancelled'`,
      (p: { running: Attempts }) => [idsOf(p.running), numbersOf(p.running), claimsOf(p.running)],
    ),
  };
}

/**
 * The statement that records `completions`: `completeInFlow` when one of them is a flow job's,
 * else `complete`, which leaves the hot path without the flows' writes.
 */
export function completionStatement(
  sql: Pick<EndingSql, 'complete' | 'completeInFlow'>,
  completions: readonly { readonly job: Pick<ClaimedJob, 'inFlow'> }[],
): EndingSql['complete'] {
  return completions.some((c) => c.job.inFlow) ? sql.completeInFlow : sql.complete;
}

/**
 * The statement of `complete` and `completeInFlow` (see them), the second with `flowRelease`: the
 * CTEs it adds after `done`, and what the final SELECT must read of them for them to run.
 */
function completeStatement(s: string, flowRelease: string, flowReleaseRead = '') {
  return preparedStatement(
    `
      WITH done AS (
        UPDATE ${s}."jobHistory" h
        SET state = 'completed', result = c.result, "completedAt" = now(), "updatedAt" = now()
        FROM unnest($1::uuid[], $3::int[], $4::jsonb[], $5::bigint[]) AS c(id, attempt, result, claim)
        WHERE h.id = c.id AND h.attempt = c.attempt AND h."claimToken" = c.claim
          AND h.state = ${ACTIVE_UNSEEN}
        RETURNING h.id, h.awaited${flowRelease ? ', h."inFlow"' : ''}
      )${flowRelease}
      SELECT id, (SELECT count(*) FROM (
               SELECT pg_notify($2, json_build_object('event', 'jobCompleted', 'id', id,
                                                      'state', 'completed')::text)
               FROM done WHERE awaited) n) AS told${flowReleaseRead}
      FROM done`,
    (p: {
      /** Each with its result: JSON text, `null` when its task returned nothing. */
      completions: readonly { readonly job: AttemptFence; readonly result: string | null }[];
      channel: string;
    }) => [
      idsOf(p.completions),
      p.channel,
      numbersOf(p.completions),
      p.completions.map((c) => c.result),
      claimsOf(p.completions),
    ],
  );
}

type EndingSql = ReturnType<typeof endingSql>;
