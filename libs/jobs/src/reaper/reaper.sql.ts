import { recordedAttempt } from '../common/recorded-attempt.js';
import type { SchemaName } from '../database/schema-name.js';
import { sqlStatement } from '../database/sql-statement.js';

/** Why the reaper ended an attempt. */
export type ReapReason = 'stale' | 'restarted' | 'silent';

export function reaperSql({ quoted: s }: SchemaName) {
  const olderThan = (param: string) => `now() - make_interval(secs => ${param})`;
  return {
    /**
     * Ends the `active` attempts nothing will finish, and requeues those with attempts left (the
     * interrupted one counts, as in the seed). An attempt is abandoned when
     * - `stale`: it started more than `staleJobTimeout` ago, whatever its instance (the fallback for
     *   an instance that is alive but stuck);
     * - `restarted`: it started before its instance's current registration, so an earlier life of
     *   that id left it behind;
     * - `silent` (fast path, only when `judgePeers`): neither its instance nor the attempt itself
     *   has been heard of for the instance's own `instanceTimeout` (this reaper's, for an instance
     *   with no registration at all). Counting from the
     *   attempt's start too means a job claimed just before its instance's row was put back is not
     *   taken for an orphan.
     *
     * The `UPDATE ... WHERE state = 'active'` is the claim: of two reapers (or a reaper and the
     * runner's fenced write) racing on a row, whichever commits second re-checks the row, finds it no
     * longer the same active attempt and skips it. With `judgePeers` it also forgets instances that
     * have been silent for `instanceTimeout`; one that was only paused puts its row back and says
     * so. Each attempt it ends is also kept in `jobAttempt` (`interrupted`, with its instance and
     * times), in the same statement, since the retry's claim overwrites the history row.
     */
    reap: sqlStatement(
      `
      WITH candidates AS (
        SELECT h.id, h.attempt, h."claimToken", h."executedBy", coalesce(i."instanceTimeout", $1) AS timeout,
          CASE WHEN h."startedAt" < ${olderThan('$2')} THEN 'stale'
               WHEN h."startedAt" < i."startedAt" THEN 'restarted'
               ELSE 'silent' END AS reason
        FROM ${s}."jobHistory" h LEFT JOIN ${s}.instances i ON i.id = h."executedBy"
        WHERE h.state = 'active' AND (
          h."startedAt" < ${olderThan('$2')}
          OR h."startedAt" < i."startedAt"
          OR ($6 AND GREATEST(i."heartbeatAt", h."startedAt") < ${olderThan('coalesce(i."instanceTimeout", $1)')})
        )
      ), stranded AS (
        UPDATE ${s}."jobHistory" h
        SET state = 'interrupted', "completedAt" = now(), "updatedAt" = now(),
            "lastErrorMessage" = CASE c.reason WHEN 'stale' THEN $7
                                               WHEN 'restarted' THEN format($8, h."executedBy")
                                               ELSE format($9, h."executedBy", c.timeout) END
        FROM candidates c
        -- The claim the candidate was: after a snooze the same instance may claim the job again, with
        -- the same attempt number, while this statement waits on the row. NULL: claimed before
        -- migration 12.
        WHERE h.id = c.id AND h.state = 'active' AND h.attempt = c.attempt
          AND h."claimToken" IS NOT DISTINCT FROM c."claimToken"
          AND h."executedBy" IS NOT DISTINCT FROM c."executedBy"
        RETURNING h.*, c.reason
      ), ${recordedAttempt(s, { name: 'recorded', ended: 'stranded', outcome: 'interrupted' })}, requeued AS (
        INSERT INTO ${s}.jobs (id, task, payload, priority, retries, "maxRetries", "isScheduled", awaited,
                               "createdBy", "createdAt", "traceContext", queue, "groupKey", "inFlow")
        SELECT id, task, payload, priority, attempt, "maxRetries", "wasScheduled", awaited, $3, "createdAt",
               "traceContext", queue, "groupKey", "inFlow"
        FROM stranded WHERE attempt <= "maxRetries"
        RETURNING id
      ), woken AS (
        SELECT pg_notify($4, $5) WHERE EXISTS (SELECT 1 FROM requeued)
      ), told AS (
        -- The error is the reaper's own message, with an instanceId of at most 200 characters: well
        -- under the 8000 bytes a notification may take.
        SELECT pg_notify($4, json_build_object('event', 'jobCompleted', 'id', id, 'state', state,
                                               'error', left("lastErrorMessage", 2000))::text)
        FROM stranded WHERE awaited AND attempt > "maxRetries"
      ), forgotten AS (
        DELETE FROM ${s}.instances WHERE $6 AND "heartbeatAt" < ${olderThan('"instanceTimeout"')}
        RETURNING id
      )
      SELECT (SELECT count(*) FROM stranded)::int AS stranded,
             (SELECT count(*) FROM requeued)::int AS requeued,
             (SELECT coalesce(json_object_agg(reason, n), '{}') FROM
               (SELECT reason, count(*)::int AS n FROM stranded GROUP BY reason) r) AS reasons,
             (SELECT coalesce(json_agg(id), '[]') FROM forgotten) AS forgotten,
             (SELECT count(*) FROM woken) + (SELECT count(*) FROM told) AS notified`,
      (p: {
        instanceTimeout: number;
        staleJobTimeout: number;
        requeuedBy: string;
        channel: string;
        /** The `newJob` notification, for requeued jobs. */
        notification: string;
        /** Judge instances by their heartbeats. */
        judgePeers: boolean;
        /** What history says of each reason; `restarted`'s and `silent`'s are `format` strings. */
        messages: { stale: string; restarted: string; silent: string };
      }) => [
        p.instanceTimeout,
        p.staleJobTimeout,
        p.requeuedBy,
        p.channel,
        p.notification,
        p.judgePeers,
        p.messages.stale,
        p.messages.restarted,
        p.messages.silent,
      ],
    ),
  };
}
