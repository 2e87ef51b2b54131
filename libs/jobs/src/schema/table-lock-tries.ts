import { setTimeout as sleep } from 'node:timers/promises';
import type { SchemaName } from '../database/schema-name.js';
import { MigrationBlockedError } from '../errors/jobs.errors.js';
import type { TransactionalMigration } from './migrations.js';
import type { RunStatement } from './online-statements.js';
import { migratorSql } from './schema-migrator.sql.js';

/** How a transactional migration waits for its table locks. */
export interface TableLockTries {
  /** Seconds one try waits for a lock (`migrationTableLockTimeout`). */
  readonly lockTimeout: number;
  /** Tries before `MigrationBlockedError`; default `TABLE_LOCK_TRIES`. */
  readonly tries?: number;
  readonly warn: (message: string) => void;
}

/** Tries of a blocked migration: with 1 s waits and the pauses below, about half a minute in all. */
export const TABLE_LOCK_TRIES = 10;
/** Pauses between two tries: the fleet's queued writes go through meanwhile. */
const PAUSE_FIRST_MS = 250;
const PAUSE_MAX_MS = 4000;
/** SQLSTATE of a lock wait that ran past `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03';
const SAVEPOINT = 'nestjs_pg_jobs_table_locks';

/**
 * Runs a transactional migration's SQL in the caller's open transaction, for `SchemaMigrator` and
 * for the TypeORM migration classes alike, so that it never stalls the fleet.
 *
 * Hazard: an `ALTER TABLE` waiting for its ACCESS EXCLUSIVE lock (behind any open transaction that
 * touched the table: a task that enqueued with `ctx.manager`, an app transaction using
 * `addJob({ manager })`) makes every later lock request on that table queue behind it, so every
 * enqueue and claim of every instance would wait as long as that transaction stays open. Each try
 * therefore runs under a short `lock_timeout`, in a savepoint: past it, the try is rolled back to
 * the savepoint, which releases every lock it took, the waiting writes go on, and the migration
 * tries again after a growing pause. The caller's `lock_timeout` is restored after success, so an
 * app's own migrations that follow in the same transaction keep theirs.
 *
 * Locks taken before the savepoint (by an earlier migration of the same transaction, as TypeORM's
 * `migrationsTransactionMode: 'all'` does) stay held during the pauses: hence `'each'`.
 */
export async function runWithTableLockTries(
  run: RunStatement,
  schema: SchemaName,
  migration: TransactionalMigration,
  options: TableLockTries,
): Promise<void> {
  const sql = migratorSql(schema);
  const tries = options.tries ?? TABLE_LOCK_TRIES;
  const [{ setting }] = (await run(sql.lockTimeout)) as { setting: string }[];
  const waitMs = `${Math.max(1, Math.round(options.lockTimeout * 1000))}ms`;
  for (let attempt = 1, pause = PAUSE_FIRST_MS; ; attempt++) {
    await run(`SAVEPOINT ${SAVEPOINT}`);
    try {
      await run(sql.setLockTimeout, [waitMs]);
      await run(migration.sql(schema));
      await run(`RELEASE SAVEPOINT ${SAVEPOINT}`);
      await run(sql.setLockTimeout, [setting]);
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw err;
      // Also restores the caller's lock_timeout: a setting made in a savepoint ends with it.
      await run(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`);
      await run(`RELEASE SAVEPOINT ${SAVEPOINT}`);
      const holders = (await run(sql.tableLockHolders, [schema.name])).map((row) =>
        String(row.holder),
      );
      if (attempt >= tries) {
        throw new MigrationBlockedError(schema.name, migration.version, tries, holders);
      }
      options.warn(
        `Migration ${migration.version} waited ${waitMs} for a table lock (migrationTableLockTimeout) and let the ` +
          `fleet's writes go on; try ${attempt + 1} of ${tries} in ${pause} ms. ` +
          `Locks on schema "${schema.name}" held by: ${holders.join('; ') || 'nobody any more'}.`,
      );
      await sleep(pause);
      pause = Math.min(pause * 2, PAUSE_MAX_MS);
    }
  }
}
