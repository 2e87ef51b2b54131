import type { SchemaName } from '../database/schema-name.js';

/** The migrator's own statements. The schema is the only identifier; every value is a parameter. */
export function migratorSql({ quoted: s }: SchemaName) {
  return {
    createSchema: `CREATE SCHEMA IF NOT EXISTS ${s}`,
    createMigrationsTable: `
      CREATE TABLE IF NOT EXISTS ${s}.migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        "appliedAt" timestamptz NOT NULL DEFAULT now()
      )`,
    currentVersion: `SELECT max(version) AS version FROM ${s}.migrations`,
    /** $1 version $2 name */
    recordVersion: `INSERT INTO ${s}.migrations (version, name) VALUES ($1, $2)`,

    /**
     * One lock per schema, held by the session until it ends, so that a migration that runs
     * outside a transaction stays serialised too. A try never waits. $1 the lock's key text
     */
    tryLock: `SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked`,
    /** Who holds the lock (its `application_name` names the instance), for the timeout's message. $1 key */
    lockHolders: `
      SELECT COALESCE(NULLIF(a.application_name, ''), 'pid ' || a.pid) || ' (pid ' || a.pid || ')' AS holder
      FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended($1, 0)`,

    /** Whether the index $2 of schema $1 exists and is INVALID (a failed concurrent build's leftover). */
    indexIsInvalid: `
      SELECT NOT i.indisvalid AS invalid
      FROM pg_index i
      JOIN pg_class c ON c.oid = i.indexrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2`,
    /** `index` comes from the library's own migrations, never from input; quoted all the same. */
    dropIndexConcurrently: (index: string) =>
      `DROP INDEX CONCURRENTLY IF EXISTS ${s}."${index.replaceAll('"', '""')}"`,
  };
}
