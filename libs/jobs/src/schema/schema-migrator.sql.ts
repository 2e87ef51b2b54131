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

    /**
     * The sessions (but this one) holding a lock on a relation of schema $1: what a migration's
     * `lock_timeout` waited behind, described for its log lines and its error. The statement an
     * idle-in-transaction session shows is the last one it ran, cut to 120 characters.
     */
    tableLockHolders: `
      SELECT format('pid %s (%s), %s for %ss: %s', a.pid, COALESCE(NULLIF(a.application_name, ''), 'no application_name'),
                    a.state, round(extract(epoch FROM now() - COALESCE(a.xact_start, a.query_start))::numeric, 1),
                    left(regexp_replace(a.query, '\\s+', ' ', 'g'), 120)) AS holder
      FROM pg_stat_activity a
      WHERE a.pid <> pg_backend_pid() AND a.pid IN (
        SELECT l.pid FROM pg_locks l
        JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE l.granted AND n.nspname = $1)
      ORDER BY a.xact_start`,
    /** Sets this transaction's `lock_timeout` (to $1, a setting's text) until it ends. */
    setLockTimeout: `SELECT set_config('lock_timeout', $1, true)`,
    lockTimeout: `SELECT current_setting('lock_timeout') AS setting`,

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
