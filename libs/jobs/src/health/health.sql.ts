import type { SchemaName } from '../database/schema-name.js';

/** The health check's statement. The schema is the only identifier. */
export function healthSql({ quoted: s }: SchemaName) {
  return {
    /**
     * The queue's lag: how long ago the most overdue due job fell due, in seconds (0 when none is
     * due). Read as a loose index scan of `jobs_claim_order` (priority DESC, "waitUntil", seq): one
     * probe per distinct priority for the next priority down, one for the earliest job of each, so
     * that a health check never reads, or sorts, a long queue (asserted in test/observability/health.spec.ts).
     */
    lag: `
      WITH RECURSIVE priorities AS (
        (SELECT priority FROM ${s}.jobs ORDER BY priority DESC LIMIT 1)
        UNION ALL
        SELECT (SELECT j.priority FROM ${s}.jobs j WHERE j.priority < p.priority
                ORDER BY j.priority DESC LIMIT 1)
        FROM priorities p WHERE p.priority IS NOT NULL
      )
      SELECT GREATEST(0, COALESCE(extract(epoch FROM now() - min(
               (SELECT j."waitUntil" FROM ${s}.jobs j WHERE j.priority = p.priority
                ORDER BY j."waitUntil" LIMIT 1))), 0))::float8 AS lag
      FROM priorities p WHERE p.priority IS NOT NULL`,
  };
}
