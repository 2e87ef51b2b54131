import { createHash } from 'node:crypto';

/**
 * A statement and its binder: callers name its parameters (`values({ id, attempt, ... })`), and the
 * order of its `$1`, `$2`, ... is written in one place, beside its text. A statement of a single
 * parameter keeps its plain text: `[id]` cannot be put in the wrong order.
 *
 * The binder builds the array `pg` sends and nothing else: no reflection over the object, no copy
 * of it, so that naming the parameters costs the hot path one small object per statement run.
 */
export interface SqlStatement<Params> {
  /** Set when the statement runs prepared (see `preparedStatement`). */
  readonly name?: string;
  readonly text: string;
  /** The statement's positional values for `params`, `$1` first. */
  readonly values: (params: Params) => unknown[];
}

/** What running a statement takes of it: its text, and its name when it runs prepared. */
export type StatementText = Pick<SqlStatement<never>, 'name' | 'text'>;

/**
 * A statement of the hot path, run as a named prepared statement: each connection parses it once
 * and, after a few runs, keeps one plan instead of planning every call, so that the hot path pays
 * for parsing and planning once per connection (see "What made the hot path fast" in
 * docs/performance.md).
 *
 * The name is derived from the text, so two modules on one pool with different schemas (hence
 * different texts) never collide on a name.
 */
export interface PreparedStatement<Params> extends SqlStatement<Params> {
  readonly name: string;
}

/** A statement run unprepared, with its binder (see `SqlStatement`). */
export function sqlStatement<Params>(
  text: string,
  values: (params: Params) => unknown[],
): SqlStatement<Params> {
  return { text, values };
}

/** A prepared statement with its binder (see `PreparedStatement`). */
export function preparedStatement<Params>(
  text: string,
  values: (params: Params) => unknown[],
): PreparedStatement<Params> {
  const digest = createHash('sha1').update(text).digest('hex').slice(0, 24);
  return { name: `nestjs_pg_jobs_${digest}`, text, values };
}
