import type { SchemaName } from '../database/schema-name.js';

export function metricsSql({ quoted: s }: SchemaName) {
  return {
    /**
     * Jobs waiting in the queue to run, per task, across all instances (a retry waiting out its
     * backoff counts; a flow's job blocked by its dependencies does not).
     */
    queueDepth: `SELECT task, queue, count(*)::int AS n FROM ${s}.jobs
                 WHERE COALESCE("blockedBy", 0) = 0 GROUP BY task, queue`,
    /** Flow jobs in the queue that wait for their dependencies to end, per task. */
    blocked: `SELECT task, queue, count(*)::int AS n FROM ${s}.jobs
              WHERE "blockedBy" > 0 GROUP BY task, queue`,
    /** Jobs running now, per task, across all instances (served by the partial index on active rows). */
    active: `SELECT task, queue, count(*)::int AS n FROM ${s}."jobHistory" WHERE state = 'active'
             GROUP BY task, queue`,
  };
}
