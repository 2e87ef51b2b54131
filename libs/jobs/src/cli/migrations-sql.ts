import type { SchemaName } from '../database/schema-name.js';
import { DEFAULT_MIGRATION_TABLE_LOCK_TIMEOUT } from '../options/defaults.js';
import { MIGRATIONS } from '../schema/migrations.js';
import type { Migration } from '../schema/migrations.js';
import { migratorSql } from '../schema/schema-migrator.sql.js';

/**
 * The library's migrations from version `from` on, as one plain SQL script for a DBA to review
 * and run with psql (`psql -v ON_ERROR_STOP=1 -f jobs.sql`). It does what `SchemaMigrator` does
 * without its lock: each transactional migration is one `BEGIN ... COMMIT` with its version row,
 * under the migrator's `lock_timeout` (so the fleet's writes never queue behind a waiting
 * `ALTER TABLE` for longer) but without its retries, which are left to the DBA; a
 * non-transactional one is marked, and its statements run one by one, outside any transaction.
 */
export function migrationsSql(
  schema: SchemaName,
  from = 1,
  migrations: readonly Migration[] = MIGRATIONS,
): string {
  const sql = migratorSql(schema);
  const selected = migrations.filter((migration) => migration.version >= from);
  const header = [
    `-- The nestjs-pg-jobs migrations of schema ${schema.quoted}, versions ${selected.map((m) => m.version).join(', ') || 'none'}.`,
    '-- Run them in order, from the first version the schema lacks (`nestjs-pg-jobs status` says which),',
    '-- while no other migration of this schema runs: psql -v ON_ERROR_STOP=1 -f this-file.sql',
    `-- Each transactional migration waits at most ${LOCK_TIMEOUT} for a table lock, so that the running`,
    '-- instances\' enqueues and claims never queue behind it for longer. If one stops with "canceling',
    '-- statement due to lock timeout", a session holds a transaction open on a table (see pg_stat_activity):',
    '-- run the file again from that version (`nestjs-pg-jobs sql --from <version>`), or end that session.',
    '',
    statement(sql.createSchema),
    statement(sql.createMigrationsTable),
  ];
  return [...header, ...selected.map((migration) => migrationBlock(schema, migration, sql))].join(
    '\n',
  );
}

function migrationBlock(
  schema: SchemaName,
  migration: Migration,
  sql: ReturnType<typeof migratorSql>,
): string {
  const title = `-- Migration ${migration.version}: ${migration.name}`;
  const record = statement(
    `INSERT INTO ${schema.quoted}.migrations (version, name) VALUES (${migration.version}, ${literal(migration.name)})`,
  );
  if (migration.transactional !== false) {
    return [
      '',
      title,
      'BEGIN;',
      `SET LOCAL lock_timeout = '${LOCK_TIMEOUT}';`,
      statement(migration.sql(schema)),
      record,
      'COMMIT;',
    ].join('\n');
  }
  const statements = migration.statements(schema);
  const indexes = statements.flatMap((s) => (s.index ? [s.index] : []));
  return [
    '',
    title,
    '-- NON-TRANSACTIONAL: run each statement on its own, never inside BEGIN ... COMMIT (CREATE INDEX',
    '-- CONCURRENTLY builds without blocking the queue). Each is safe to run again after a failure,',
    ...(indexes.length
      ? [
          '-- once the INVALID index a failed build leaves is dropped:',
          ...indexes.map((index) => `--   ${sql.dropIndexConcurrently(index)};`),
        ]
      : ['-- as is.']),
    ...statements.map((s) => statement(s.sql)),
    record,
  ].join('\n');
}

/** The migrator's `lock_timeout` (`migrationTableLockTimeout`'s default), as a setting. */
const LOCK_TIMEOUT = `${DEFAULT_MIGRATION_TABLE_LOCK_TIMEOUT}s`;

/** One statement (or a migration's several), trimmed and ended with a semicolon. */
function statement(text: string): string {
  const trimmed = dedent(text).trim();
  return trimmed.endsWith(';') ? trimmed : `${trimmed};`;
}

/**
 * The SQL of a migration is indented as the source that holds it: printed flush left, with the
 * lines that continue a statement begun on the first line indented under it.
 */
function dedent(text: string): string {
  const [first, ...rest] = text.split('\n');
  const indents = rest
    .filter((line) => line.trim() !== '')
    .map((line) => line.length - line.trimStart().length);
  const cut = indents.length ? Math.min(...indents) : 0;
  const continuation = first.trim() === '' ? '' : '  ';
  return [
    first.trimStart(),
    ...rest.map((line) => (line.trim() === '' ? '' : continuation + line.slice(cut))),
  ].join('\n');
}

/** A migration's name as a SQL string literal: names are the library's constants, quoted all the same. */
function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
