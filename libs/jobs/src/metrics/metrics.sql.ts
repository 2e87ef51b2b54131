import type { SchemaName } from '../database/schema-name.js';

export function metricsSql({ quoted: s }: SchemaName) {
  return {
    /** Jobs waiting in the queue, per task, across all instances (a retry waiting out its backoff counts). */
    queueDepth: `SELECT task, queue, count(*)::int AS n FROM ${s}.jobs GROUP BY task, queue`,
    /** Jobs running now, per task, across all instances (served by the partial index on active rows). */
    active: `SELECT task, queue, count(*)::int AS n FROM ${s}."jobHistory" WHERE state = 'active'
             GROUP BY task, queue`,
  };
}
