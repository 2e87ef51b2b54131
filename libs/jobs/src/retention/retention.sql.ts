import type { SchemaName } from '../database/schema-name.js';

export function retentionSql({ quoted: s }: SchemaName) {
  return {
    /**
     * Deletes at most $2 history rows of jobs that ended for good more than $1 seconds ago, oldest
     * first. A `failed` or `interrupted` row whose job is queued again (a retry is pending) still
     * describes a live job and is kept. `SKIP LOCKED` lets two instances prune side by side, and
     * the `LIMIT` keeps each statement's locks and WAL small however much has piled up.
     *
     * $1 historyExpiration (seconds) $2 batch size
     */
    pruneBatch: `
      WITH expired AS (
        SELECT h.id FROM ${s}."jobHistory" h
        WHERE h.state IN ('completed', 'failed', 'cancelled', 'interrupted', 'skipped')
          AND h."completedAt" < now() - make_interval(secs => $1)
          AND NOT EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.id = h.id)
        ORDER BY h."completedAt"
        LIMIT $2
        FOR UPDATE SKIP LOCKED
      )
      DELETE FROM ${s}."jobHistory" h USING expired WHERE h.id = expired.id
      RETURNING h.id`,
  };
}
