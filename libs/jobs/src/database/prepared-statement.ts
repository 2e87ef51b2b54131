import { createHash } from 'node:crypto';

/**
 * A statement of the hot path, run as a named prepared statement: each connection parses it once
 * and, after a few runs, keeps one plan instead of planning every call, so that the hot path pays
 * for parsing and planning once per connection (see "What made the hot path fast" in
 * docs/performance.md).
 *
 * The name is derived from the text, so two modules on one pool with different schemas (hence
 * different texts) never collide on a name.
 */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

export function preparedStatement(text: string): PreparedStatement {
  const digest = createHash('sha1').update(text).digest('hex').slice(0, 24);
  return { name: `nestjs_pg_jobs_${digest}`, text };
}
