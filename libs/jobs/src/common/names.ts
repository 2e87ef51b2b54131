/**
 * The identifier rules of the library, each defined once with the words its error messages use.
 *
 * Task and schedule names: safe in a log line, a metric label, a URL and a NOTIFY payload without
 * escaping, and short enough for an index.
 */
export const NAME_PATTERN = /^[A-Za-z0-9_.:-]{1,200}$/;
export const NAME_RULE = '1-200 letters, digits or "_.:-"';

/** A job id: a UUID, checked before it reaches a `uuid` parameter (whose cast error says less). */
export const JOB_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A schema name, the one identifier that enters SQL text (see `database/schema-name.ts`): nothing
 * that quoting would have to escape or fold, and never PostgreSQL's reserved `pg_` prefix.
 */
export const SCHEMA_NAME_PATTERN = /^(?!pg_)[a-z_][a-z0-9_]{0,39}$/;
export const SCHEMA_NAME_RULE =
  'a lower-case identifier of at most 40 characters (letters, digits, _; not starting with pg_)';
