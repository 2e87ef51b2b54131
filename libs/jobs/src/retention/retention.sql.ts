import type { SchemaName } from '../database/schema-name.js';
import { DEFAULT_PARTITION, isTimePartitionName } from '../history-partitions/partition-range.js';

export function retentionSql({ quoted: s }: SchemaName) {
  /**
   * At most $2 rows of `table` (a job's records beside its history, keyed by "jobId" and `key`)
   * whose job, of an id below $3, is gone from the queue and from history, locked for deletion.
   */
  const expiredRecords = (table: string, key: string) => `
        SELECT r."jobId", r.${key} FROM ${s}.${table} r
        WHERE r."jobId" < $3::uuid
          AND NOT EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.id = r."jobId")
          AND NOT EXISTS (SELECT 1 FROM ${s}."jobHistory" h WHERE h.id = r."jobId")
        LIMIT $2
        FOR UPDATE SKIP LOCKED`;

  return {
    /**
     * Deletes at most $2 rows of `partition`, a partition of `jobHistory` (the default partition,
     * or a time partition held past its drop by a row that outlives the rest: the others are
     * dropped whole, `history-partitions/`), of jobs that ended for good more than $1 seconds ago,
     * oldest first. A `failed` or `interrupted` row whose job is queued again (a retry is pending)
     * still describes a live job and is kept, as is a `snoozed` one. `SKIP LOCKED` lets two
     * instances prune side by side, and the `LIMIT` keeps each statement's locks and WAL small
     * however much has piled up.
     *
     * Plan: it must walk the partition's end-time index (job_history_ended_at's) from its oldest end
     * and stop at the limit. The states are therefore named by the ones left out (an attempt that
     * has not ended, `active`, and the record of a snooze, whose job waits in the queue), never as
     * `state IN (...)`: on a history whose statistics are missing or stale, that list matches
     * job_history_state_ended_at, and the planner collected every expired row through it and
     * sorted them all, for each batch of a round, so that a batch's cost grew with the backlog
     * instead of its size (see "History growth under a steady drain" in docs/performance.md).
     * `test/database/retention-pruning.spec.ts` holds the plan. A state added later that must
     * outlive its "completedAt" has to be left out here too (and in `history-partitions.sql.ts`).
     *
     * $1 historyExpiration (seconds) $2 batch size
     */
    /**
     * Run before `pruneBatch`, in its transaction: the planner may not sort. Whether it walks the
     * end-time index or scans and sorts every expired row turned, on a history whose statistics
     * are stale, on estimates as thin as the row's width or one more condition; with sorting
     * priced out, the index walk (in order already) is the plan, whatever the statistics say.
     */
    prunePlan: 'SET LOCAL enable_sort = off',

    pruneBatch: (partition: string) => {
      if (partition !== DEFAULT_PARTITION && !isTimePartitionName(partition)) {
        throw new Error(`${partition} is not a partition of jobHistory`);
      }
      return `
      WITH expired AS (
        SELECT h.id FROM ${s}."${partition}" h
        WHERE h."completedAt" < now() - make_interval(secs => $1)
          AND h.state NOT IN ('active', 'snoozed')
          AND NOT EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.id = h.id)
          -- A flow's jobs expire with their flow, together (pruneFlows).
          AND h."inFlow" IS NOT TRUE
        ORDER BY h."completedAt"
        LIMIT $2
        FOR UPDATE SKIP LOCKED
      )
      DELETE FROM ${s}."${partition}" h USING expired WHERE h.id = expired.id
      RETURNING h.id`;
    },

    /**
     * Whether any flow is older than $1 seconds: only then may one have expired. A round asks first,
     * so that a fleet without flows runs no delete on history for them (an empty DELETE still fires
     * the statement triggers a user may have put on history).
     */
    anyOldFlow: `SELECT 1 FROM ${s}."jobFlow" WHERE "createdAt" < now() - make_interval(secs => $1) LIMIT 1`,

    /**
     * Deletes at most $2 flows, oldest first, whose every job ended for good more than $1 seconds
     * ago: their jobs' history (wherever it is), their members and dependencies, and the flow. A
     * flow expires whole, after its last job, so `getFlow` never shows a flow with jobs missing; a
     * partition of history that holds a flow's jobs is dropped only once its flows are gone
     * (`history-partitions.sql.ts`). Each flow is judged by probes of its members' ids: its jobs
     * not queued (blocked, pending, a retry pending), none running or snoozed, none ended since.
     *
     * $1 historyExpiration (seconds) $2 batch size (flows)
     */
    pruneFlows: `
      WITH expired AS (
        SELECT f.id FROM ${s}."jobFlow" f
        WHERE f."createdAt" < now() - make_interval(secs => $1)
          AND NOT EXISTS (
            SELECT 1 FROM ${s}."jobFlowMember" m
            WHERE m."flowId" = f.id
              AND (EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.id = m."jobId")
                   OR EXISTS (SELECT 1 FROM ${s}."jobHistory" h
                              WHERE h.id = m."jobId"
                                AND (h.state IN ('active', 'snoozed')
                                     OR h."completedAt" >= now() - make_interval(secs => $1)))))
        ORDER BY f."createdAt"
        LIMIT $2
        FOR UPDATE SKIP LOCKED
      ), members AS (
        DELETE FROM ${s}."jobFlowMember" m USING expired e WHERE m."flowId" = e.id
        RETURNING m."jobId"
      ), history AS (
        DELETE FROM ${s}."jobHistory" h USING members m WHERE h.id = m."jobId"
      ), edges AS (
        -- Every dependency of a flow is on a job of the flow: found by its primary key's prefix.
        DELETE FROM ${s}."jobDependency" d USING members m WHERE d."dependsOn" = m."jobId"
      )
      DELETE FROM ${s}."jobFlow" f USING expired e WHERE f.id = e.id
      RETURNING f.id`,

    /**
     * What durable steps leave (migration 15), after history's prune: at most $2 checkpoints of
     * jobs gone from the queue and from history (their job expired, so they did), the event waits
     * of jobs no longer suspended (woken by a timeout, or gone), and the events sent more than $1
     * seconds ago; and at most $2 recorded attempts (migration 16: those that ended without completing) of such jobs. Returns the larger
     * of the checkpoints and attempts it deleted: $2 means more may be left.
     *
     * Only the checkpoints and attempts of ids below $3 are looked at, a range of the primary key: a job expires
     * $1 seconds after its end, so its id, which begins with the time it was made, is older than
     * that (an id of version 4, from before ids held their time, sorts anywhere: the checkpoints of
     * such a job, queued before that upgrade and run with steps after this one, may outlive it).
     * Without the bound, each round walked the checkpoints of every job still kept, two probes
     * each, to find the few that expired.
     *
     * $1 historyExpiration (seconds) $2 batch size $3 the id bound of now − $1
     */
    pruneJobRecords: `
      WITH orphaned AS (${expiredRecords('"jobStep"', 'name')}), steps AS (
        DELETE FROM ${s}."jobStep" st USING orphaned o
        WHERE st."jobId" = o."jobId" AND st.name = o.name
        RETURNING 1
      ), waits AS (
        DELETE FROM ${s}."jobEventWait" w
        WHERE NOT EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.id = w."jobId" AND j."waitingFor" IS NOT NULL)
      ), events AS (
        DELETE FROM ${s}."jobEvent" e WHERE e."createdAt" < now() - make_interval(secs => $1)
      ), "expiredAttempts" AS (${expiredRecords('"jobAttempt"', '"startedAt"')}), attempts AS (
        DELETE FROM ${s}."jobAttempt" a USING "expiredAttempts" x
        WHERE a."jobId" = x."jobId" AND a."startedAt" = x."startedAt"
        RETURNING 1
      )
      SELECT greatest((SELECT count(*) FROM steps), (SELECT count(*) FROM attempts))::int AS deleted`,
  };
}
