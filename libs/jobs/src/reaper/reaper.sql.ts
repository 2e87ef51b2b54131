import type { SchemaName } from '../database/schema-name.js';

export function reaperSql({ quoted: s }: SchemaName) {
  return {
    /**
     * The `UPDATE ... WHERE state = 'active'` is the claim: two reapers sweeping at once both filter
     * on it, so whichever commits second matches nothing. An interrupted attempt counts as an
     * attempt; a job that had used them all up stays `interrupted`.
     *
     * $1 stale after (seconds) $2 message $3 requeuedBy
     */
    reapStale: `
      WITH stranded AS (
        UPDATE ${s}."jobHistory"
        SET state = 'interrupted', "lastErrorMessage" = $2, "completedAt" = now(), "updatedAt" = now()
        WHERE state = 'active' AND "startedAt" < now() - make_interval(secs => $1)
        RETURNING *
      ), requeued AS (
        INSERT INTO ${s}.jobs (id, task, payload, priority, retries, "maxRetries", "isScheduled", awaited,
                               "createdBy", "createdAt")
        SELECT id, task, payload, priority, attempt, "maxRetries", "wasScheduled", awaited, $3, "createdAt"
        FROM stranded WHERE attempt <= "maxRetries"
        RETURNING id
      )
      SELECT (SELECT count(*) FROM stranded)::int AS stranded, (SELECT count(*) FROM requeued)::int AS requeued`,
  };
}
