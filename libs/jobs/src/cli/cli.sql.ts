import { queuedJobState } from '../common/job-states.js';
import type { SchemaName } from '../database/schema-name.js';

/** The CLI's statements. The schema is the only identifier; every value is a parameter. */
export function cliSql({ quoted: s }: SchemaName) {
  return {
    /**
     * Which of the schema's tables exist, so that `status` reads only those: a schema never
     * migrated has none, and version 0. $1 the bare schema name
     */
    tables: `
      SELECT to_regclass(quote_ident($1) || '.migrations') IS NOT NULL AS migrations,
             to_regclass(quote_ident($1) || '."jobHistory"') IS NOT NULL AS history`,

    /**
     * Jobs per task and state. A job is in one place: pending (or blocked, in a flow) in `jobs` (a
     * job waiting for its retry is pending, though its last attempt's history row says `failed`),
     * else in history.
     */
    countsByState: `
      SELECT q.task, ${queuedJobState('q')} AS state, count(*)::int AS count
      FROM ${s}.jobs q GROUP BY 1, 2
      UNION ALL
      SELECT h.task, h.state, count(*)::int AS count FROM ${s}."jobHistory" h
      WHERE NOT EXISTS (SELECT 1 FROM ${s}.jobs q WHERE q.id = h.id)
      GROUP BY h.task, h.state
      ORDER BY task, state`,
  };
}
