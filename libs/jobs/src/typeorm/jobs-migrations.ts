import { Logger } from '@nestjs/common';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import { toSchemaName } from '../database/schema-name.js';
import type { SchemaName } from '../database/schema-name.js';
import { IrreversibleMigrationError } from '../errors/jobs.errors.js';
import { DEFAULT_MIGRATION_TABLE_LOCK_TIMEOUT, DEFAULT_SCHEMA } from '../options/defaults.js';
import { MIGRATIONS } from '../schema/migrations.js';
import type { Migration } from '../schema/migrations.js';
import { runOnlineStatements } from '../schema/online-statements.js';
import { migratorSql } from '../schema/schema-migrator.sql.js';
import { runWithTableLockTries } from '../schema/table-lock-tries.js';

/**
 * TypeORM orders migrations by the 13 digits that end their names (a `Date.now()` when made): the
 * library's come first, before any app's, in version order, and keep their names across releases
 * (TypeORM recognises a migration that ran by its name).
 */
const TIMESTAMP_BASE = 1_000_000_000_000;

/**
 * A TypeORM migration class.
 *
 * @publicApi
 */
export type JobsMigrationClass = new () => MigrationInterface;

/**
 * The library's migrations of `schema` (the module's `schema` option) as TypeORM migration
 * classes, for an app that sets `migrate: false` and runs its schema changes through its own
 * TypeORM pipeline:
 *
 * ```ts
 * new DataSource({ ..., migrations: [...jobsMigrations('jobs'), ...appMigrations], migrationsTransactionMode: 'each' })
 * ```
 *
 * They are made from the same list the module's own migrator applies, and record their versions
 * in the schema's `migrations` table as it does, so `JobsModule` accepts the schema they build, and
 * each skips a version the module (or the CLI) already applied. Non-transactional ones (concurrent
 * index builds) set `transaction = false`, which TypeORM refuses under its default
 * `migrationsTransactionMode: 'all'`: use `'each'`. TypeORM takes no lock: run the pipeline from
 * one process at a time. `down()` throws `IrreversibleMigrationError`. A transactional one waits
 * for its table locks as the module's migrator does (1 s, `DEFAULT_MIGRATION_TABLE_LOCK_TIMEOUT`,
 * then a pause that lets the fleet's writes through, up to 10 tries, then
 * `MigrationBlockedError`); under `'all'` the locks of the migrations before it stay held during
 * those pauses, another reason for `'each'`.
 *
 * @publicApi
 */
export function jobsMigrations(schema: string = DEFAULT_SCHEMA): JobsMigrationClass[] {
  const name = toSchemaName(schema);
  return MIGRATIONS.map((migration) => migrationClass(name, migration));
}

function migrationClass(schema: SchemaName, migration: Migration): JobsMigrationClass {
  const name = `NestjsPgJobs_${schema.name}_v${migration.version}_${TIMESTAMP_BASE + migration.version}`;
  const sql = migratorSql(schema);
  const logger = new Logger('JobsSchema');

  /** Whether the schema already has this version: applied by the module, the CLI or a run before. */
  const applied = async (runner: QueryRunner) => {
    await runner.query(sql.createSchema);
    await runner.query(sql.createMigrationsTable);
    const [row] = (await runner.query(sql.currentVersion)) as { version: number | null }[];
    return (row?.version ?? 0) >= migration.version;
  };
  const record = (runner: QueryRunner) =>
    runner.query(sql.recordVersion, [migration.version, migration.name]);

  const JobsSchemaMigration = class implements MigrationInterface {
    readonly name = name;
    /** Left to the transaction mode for a transactional migration; `false` runs it outside any. */
    readonly transaction = migration.transactional === false ? false : undefined;

    async up(runner: QueryRunner): Promise<void> {
      if (migration.transactional === false) {
        if (await applied(runner)) return;
        await runOnlineStatements(
          (text, values) => runner.query(text, values),
          schema,
          migration,
          (message) => logger.warn(message),
        );
        await record(runner);
        return;
      }
      // Under migrationsTransactionMode 'none' no transaction is open: the migration and its
      // version row still commit together, or not at all.
      const own = !runner.isTransactionActive;
      if (own) await runner.startTransaction();
      try {
        if (!(await applied(runner))) {
          await runWithTableLockTries(
            (text, values) => runner.query(text, values),
            schema,
            migration,
            {
              lockTimeout: DEFAULT_MIGRATION_TABLE_LOCK_TIMEOUT,
              warn: (message) => logger.warn(message),
            },
          );
          await record(runner);
        }
        if (own) await runner.commitTransaction();
      } catch (err) {
        if (own) await runner.rollbackTransaction();
        throw err;
      }
    }

    async down(): Promise<void> {
      throw new IrreversibleMigrationError(name);
    }
  };
  Object.defineProperty(JobsSchemaMigration, 'name', { value: name });
  return JobsSchemaMigration;
}
