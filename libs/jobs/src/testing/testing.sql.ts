import type { SchemaName } from '../database/schema-name.js';

/** The testing kit's statements. The schema is the only identifier. */
export function testingSql({ quoted: s }: SchemaName) {
  return {
    /**
     * The work `runUntilIdle` waits for, per task: jobs due now (by the database's clock) and
     * attempts running on any instance. None left means idle. A claim moves a job from `jobs` to an
     * `active` history row in one statement, so a job is never seen in neither.
     */
    busy: `
      SELECT task, 'pending' AS state, count(*)::int AS count
      FROM ${s}.jobs WHERE "waitUntil" <= now() GROUP BY task
      UNION ALL
      SELECT task, 'active' AS state, count(*)::int AS count
      FROM ${s}."jobHistory" WHERE state = 'active' GROUP BY task
      ORDER BY task, state`,
  };
}
