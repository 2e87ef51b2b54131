import { sqlStatement } from '../database/sql-statement.js';
import type { SchemaName } from '../database/schema-name.js';
import { filterSql, filterValues, notQueuedAgain } from './job-filter.sql.js';
import type { FilterValues } from './job-filter.sql.js';

/** The parameters of a batch's pick (`pickEndedJobs`). */
interface PickEndedParams {
  readonly filter: FilterValues;
  /** Ended states only (`DELETABLE`): the validation of `deleteJobs` let no other through. */
  readonly states: readonly string[];
  /** Only jobs that ended at or before this time (the call's start). */
  readonly endedAtOrBefore: Date;
  /** How many jobs the batch takes at most. */
  readonly limit: number;
}

/**
 * The statements of `deleteJobs`, built once per schema: a batch is both of them, in this order, in
 * one short transaction. Every value is a parameter; the schema is the only identifier.
 *
 * Why two statements: a retry (`retryJobs`, the dashboard's) locks a job's history row, then
 * queues the job again, and commits. A single statement's snapshot would not see a retry that
 * committed after it began, and the delete would take the history of a job that is queued again.
 * Here the pick locks the rows first; the delete, a later statement of the same transaction, takes
 * a snapshot of its own, in which every retry that held one of those rows has committed (it is
 * then in `jobs`, and left) or has not begun (it will find the row gone, and queue nothing).
 */
export function bulkDeleteSql({ quoted: s }: SchemaName) {
  return {
    /**
     * Locks up to `limit` history rows of jobs that ended for good in one of `states`, at or
     * before `endedAtOrBefore` (so that a producer of failing jobs cannot keep the call going),
     * matching the filter. Ended for good as retention has it (`retention.sql.ts`, pruneBatch):
     * not queued again (a failed or interrupted attempt whose retry is pending describes a live
     * job). A flow's jobs are left: a flow expires whole, with its flow (pruneFlows), so that
     * `getFlow` never shows a flow with jobs missing. `SKIP LOCKED`: a row another transaction
     * holds (a retry queuing it again, retention deleting it) is left to it, and nothing waits.
     * Fewer rows than `limit` means none is left.
     */
    pickEndedJobs: sqlStatement(
      `
      SELECT h.id FROM ${s}."jobHistory" h
      WHERE h.state = ANY($2::text[]) AND h."completedAt" <= $3
        AND h."inFlow" IS NOT TRUE
        AND ${filterSql(s, 'h', 'jobHistory', 4)} AND ${notQueuedAgain(s, 'h')}
      LIMIT $1
      FOR UPDATE OF h SKIP LOCKED`,
      (p: PickEndedParams) => [p.limit, p.states, p.endedAtOrBefore, ...filterValues(p.filter)],
    ),

    /**
     * Deletes the picked jobs (`ids`, locked by `pickEndedJobs` in this transaction) that are still
     * not queued again, with what they leave beside their history: their durable steps' checkpoints
     * (`jobStep`) and their failed attempts (`jobAttempt`), found by the primary keys' prefix.
     * Retention's `pruneJobRecords` would delete those later only when `historyExpiration` is not
     * 0, and only once the job's id is older than `historyExpiration`: deleting them here leaves
     * nothing behind whatever the options. Returns how many jobs it deleted.
     */
    deleteEndedJobs: sqlStatement(
      `
      WITH deleted AS (
        DELETE FROM ${s}."jobHistory" h
        WHERE h.id = ANY($1::uuid[]) AND NOT EXISTS (SELECT 1 FROM ${s}.jobs q WHERE q.id = h.id)
        RETURNING h.id
      ), steps AS (
        DELETE FROM ${s}."jobStep" st USING deleted d WHERE st."jobId" = d.id
      ), attempts AS (
        DELETE FROM ${s}."jobAttempt" a USING deleted d WHERE a."jobId" = d.id
      )
      SELECT count(*)::int AS deleted FROM deleted`,
      (p: { ids: readonly string[] }) => [p.ids],
    ),
  };
}

export type BulkDeleteSql = ReturnType<typeof bulkDeleteSql>;
