import type { SchemaName } from '../database/schema-name.js';

/** The partitioned index of history's errors. */
const ERROR_SEARCH_INDEX = 'job_history_error_trgm';

/**
 * The statements that make the error search index: a trigram index of history's last errors, which
 * turns a search by error text (`ILIKE '%…%'`) into an index look-up. DDL takes no parameters: the
 * extension's schema enters the text quoted by PostgreSQL (`quote_ident`).
 */
export function errorSearchIndexSql(schema: SchemaName) {
  const s = schema.quoted;
  return {
    /** Whether the index is made (valid or not: its parts are `completeIndexes`' to build). */
    made: `SELECT to_regclass('${s}.${ERROR_SEARCH_INDEX}') IS NOT NULL AS made`,

    /** The schema pg_trgm is installed in, quoted; no row when it is not installed. */
    trigramSchema: `
      SELECT quote_ident(n.nspname) AS schema
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
      WHERE e.extname = 'pg_trgm'`,

    /**
     * Installs pg_trgm in the module's schema, where its functions stay out of the app's way. A
     * trusted extension: a role that may create objects in the database may install it.
     */
    installTrigram: `CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA ${s}`,

    /**
     * The index, on the parent alone (`ON ONLY`: nothing is built; SHARE on the parent, briefly),
     * invalid until each partition's part is attached (`completeIndexes`).
     */
    createParent: (trigramSchema: string) =>
      `CREATE INDEX IF NOT EXISTS ${ERROR_SEARCH_INDEX} ON ONLY ${s}."jobHistory"
       USING gin ("lastErrorMessage" ${trigramSchema}.gin_trgm_ops) WHERE "lastErrorMessage" IS NOT NULL`,
  };
}
