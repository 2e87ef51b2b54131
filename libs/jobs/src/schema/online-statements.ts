import type { SchemaName } from '../database/schema-name.js';
import type { OnlineMigration } from './migrations.js';
import { migratorSql } from './schema-migrator.sql.js';

/** Runs one statement on a session outside any transaction and returns its rows. */
export type RunStatement = (text: string, values?: unknown[]) => Promise<Record<string, unknown>[]>;

/**
 * Runs a non-transactional migration's statements one by one (autocommit), for `SchemaMigrator`
 * and for the TypeORM migration classes alike. A CONCURRENTLY build that failed (cancelled, a
 * deadlock, a duplicate for a unique index, the connection lost) leaves its index behind, INVALID:
 * never used by queries, yet maintained by every write, and skipped by `IF NOT EXISTS`. It is
 * dropped first, so that the retry builds it.
 */
export async function runOnlineStatements(
  run: RunStatement,
  schema: SchemaName,
  migration: OnlineMigration,
  warn: (message: string) => void,
): Promise<void> {
  const sql = migratorSql(schema);
  for (const statement of migration.statements(schema)) {
    if (statement.index) {
      const [row] = await run(sql.indexIsInvalid, [schema.name, statement.index]);
      if (row?.invalid) {
        warn(
          `Dropping the invalid index ${statement.index} a failed build left, to build it again.`,
        );
        await run(sql.dropIndexConcurrently(statement.index));
      }
    }
    await run(statement.sql);
  }
}
