import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@nestjs/common';
import type pg from 'pg';
import { isConnectionError } from '../database/connection-errors.js';
import type { JobsDatabase } from '../database/jobs-database.js';
import { isOwnSession } from '../database/session-probe.js';
import { inTransaction } from '../database/transaction.js';
import {
  DatabaseUnreachableError,
  MigrationBlockedError,
  MigrationLockTimeoutError,
  SchemaNotMigratedError,
} from '../errors/jobs.errors.js';
import {
  DEFAULT_MIGRATION_LOCK_TIMEOUT,
  DEFAULT_MIGRATION_TABLE_LOCK_TIMEOUT,
} from '../options/defaults.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from './migrations.js';
import type { Migration, OnlineMigration, TransactionalMigration } from './migrations.js';
import { runOnlineStatements } from './online-statements.js';
import { migratorSql } from './schema-migrator.sql.js';
import { runWithTableLockTries } from './table-lock-tries.js';
import type { TableLockTries } from './table-lock-tries.js';

export interface SchemaMigratorOptions {
  /** Seconds to wait for another instance's migration lock (`migrationLockTimeout`). */
  readonly lockTimeout?: number;
  /** Seconds a migration's statement waits for a table lock (`migrationTableLockTimeout`). */
  readonly tableLockTimeout?: number;
  /** Internal, for tests: tries of a migration blocked on its table locks. */
  readonly tableLockTries?: number;
  /** Internal, for tests: the migrations to apply instead of the library's. */
  readonly migrations?: readonly Migration[];
}

/** SQLSTATEs that mean the schema, or its migrations table, does not exist yet: version 0. */
const MISSING_SCHEMA_CODES = new Set(['42P01', '3F000']);
/** Pauses between two tries of the migration lock: from the first to at most the last. */
const LOCK_RETRY_FIRST_MS = 50;
const LOCK_RETRY_MAX_MS = 500;

/**
 * Brings the module's schema up to date. Instances that boot together serialise on a session
 * advisory lock (TypeORM's own migrations take none), waited for at most `lockTimeout`. A
 * transactional migration commits with its version row, so a failure leaves the schema at the last
 * good version, and waits for its table locks only briefly, again and again, never stalling the
 * fleet's writes behind it (`table-lock-tries.ts`); a non-transactional one (concurrent index builds) runs statement by statement and
 * records its version last, its statements being idempotent (the rules are in `migrations.ts`).
 *
 * A schema that is current needs no lock: the version is read first, and an instance with nothing
 * to apply boots at once, even behind a transaction-mode pooler. Migrating there is refused
 * instead: a session lock taken through such a pooler stays with a server connection that other
 * clients then get (they would take it as theirs, since a session re-enters its own locks) and is
 * never released by the client that took it; and a concurrent index build cannot run inside the
 * one transaction that would pin a server connection. So migrations run on a direct connection.
 */
export class SchemaMigrator {
  private readonly logger = new Logger('JobsSchema');
  private readonly lockTimeout: number;
  private readonly tableLocks: TableLockTries;
  private readonly migrations: readonly Migration[];
  private readonly sql: ReturnType<typeof migratorSql>;

  constructor(
    private readonly db: JobsDatabase,
    options: SchemaMigratorOptions = {},
  ) {
    this.lockTimeout = options.lockTimeout ?? DEFAULT_MIGRATION_LOCK_TIMEOUT;
    this.tableLocks = {
      lockTimeout: options.tableLockTimeout ?? DEFAULT_MIGRATION_TABLE_LOCK_TIMEOUT,
      tries: options.tableLockTries,
      warn: (message) => this.logger.warn(message),
    };
    this.migrations = options.migrations ?? MIGRATIONS;
    this.sql = migratorSql(db.schema);
  }

  /**
   * Applies the migrations the schema lacks and returns how many. `upTo` (internal, for tests)
   * stops after that version.
   */
  async migrate(upTo = Infinity): Promise<number> {
    const pending = (version: number) =>
      this.migrations.some((migration) => migration.version > version && migration.version <= upTo);
    if (!pending(await this.readVersion())) return 0;
    const client = this.db.createSessionClient('migrate');
    client.on('error', (err) => this.logger.warn(`Migration connection error: ${err.message}`));
    await client.connect().catch((err: unknown) => {
      throw isConnectionError(err)
        ? new DatabaseUnreachableError(`migrating schema "${this.db.schema.name}"`, err)
        : err;
    });
    try {
      if (!(await isOwnSession(this.db, client))) throw this.behindPooler();
      await this.lock(client);
      await client.query(this.sql.createSchema);
      await client.query(this.sql.createMigrationsTable);
      const current = await this.currentVersion(client);
      let applied = 0;
      for (const migration of this.migrations) {
        if (migration.version <= current || migration.version > upTo) continue;
        if (migration.transactional === false) await this.applyOnline(client, migration);
        else await this.applyInTransaction(client, migration);
        applied++;
        this.logger.log(`Applied migration ${migration.version}: ${migration.name}`);
      }
      return applied;
    } finally {
      // Ending the session releases the advisory lock.
      await client.end().catch(() => undefined);
    }
  }

  /** With `migrate: false`: fail the boot now rather than on the first job. */
  async assertCurrent(): Promise<void> {
    const { quoted } = this.db.schema;
    const version = await this.readVersion();
    if (version < LATEST_SCHEMA_VERSION) {
      throw new SchemaNotMigratedError(
        `Schema ${quoted} is at version ${version}, this library needs ${LATEST_SCHEMA_VERSION}, and "migrate" is false. ` +
          'Boot one instance with migrate: true, or apply the migrations yourself.',
      );
    }
  }

  /** The schema's version, read on the pool; 0 when the schema or its migrations table is missing. */
  private readVersion(): Promise<number> {
    return this.currentVersion(this.db.pool).catch((err: unknown) => {
      // Only a schema or table that does not exist means "never migrated". A connection that is
      // refused or dropped says nothing about the schema, and must not read as version 0.
      if (MISSING_SCHEMA_CODES.has((err as { code?: string }).code ?? '')) return 0;
      if (isConnectionError(err)) {
        throw new DatabaseUnreachableError(
          `checking the version of schema "${this.db.schema.name}"`,
          err,
        );
      }
      throw err;
    });
  }

  private behindPooler(): SchemaNotMigratedError {
    return new SchemaNotMigratedError(
      `Schema ${this.db.schema.quoted} needs migrations, and this connection goes through a transaction-mode ` +
        'pooler (such as PgBouncer), where the migration lock (a session advisory lock) cannot hold. ' +
        'Migrate on a direct connection to PostgreSQL: ' +
        `\`npx nestjs-pg-jobs migrate --connection <direct url> --schema ${this.db.schema.name}\`, ` +
        'or boot one instance with a direct connection. Instances behind the pooler then find the schema current ' +
        'and boot without migrating (or set migrate: false on them).',
    );
  }

  /**
   * Waits for the schema's migration lock at most `lockTimeout`, by trying it again and again
   * rather than queueing on it: a session blocked in `pg_advisory_lock` holds a snapshot for as
   * long as it waits, and a concurrent index build of the holder waits for every older snapshot of
   * the database, so the two would deadlock. Each try is an instant statement.
   */
  private async lock(client: pg.Client): Promise<void> {
    const key = `nestjs-pg-jobs:migrate:${this.db.schema.name}`;
    const deadline = Date.now() + this.lockTimeout * 1000;
    for (let pause = LOCK_RETRY_FIRST_MS; ; pause = Math.min(pause * 2, LOCK_RETRY_MAX_MS)) {
      const { rows } = await client.query<{ locked: boolean }>(this.sql.tryLock, [key]);
      if (rows[0].locked) return;
      const left = deadline - Date.now();
      if (left <= 0) {
        const holders = await client
          .query<{ holder: string }>(this.sql.lockHolders, [key])
          .then((result) => result.rows.map((row) => row.holder))
          .catch(() => []);
        throw new MigrationLockTimeoutError(this.db.schema.name, this.lockTimeout, holders);
      }
      await sleep(Math.min(pause, left));
    }
  }

  private async applyInTransaction(
    client: pg.Client,
    migration: TransactionalMigration,
  ): Promise<void> {
    await inTransaction(
      client,
      async () => {
        await runWithTableLockTries(
          async (text, values) => (await client.query(text, values)).rows,
          this.db.schema,
          migration,
          this.tableLocks,
        );
        await client.query(this.sql.recordVersion, [migration.version, migration.name]);
      },
      (err, rollbackError) => this.failed(migration, err, rollbackError),
    );
  }

  private async applyOnline(client: pg.Client, migration: OnlineMigration): Promise<void> {
    try {
      await runOnlineStatements(
        async (text, values) => (await client.query(text, values)).rows,
        this.db.schema,
        migration,
        (message) => this.logger.warn(message),
      );
      await client.query(this.sql.recordVersion, [migration.version, migration.name]);
    } catch (err) {
      throw this.failed(migration, err);
    }
  }

  private failed(
    migration: Migration,
    err: unknown,
    rollbackError?: Error,
  ): SchemaNotMigratedError | MigrationBlockedError {
    if (err instanceof MigrationBlockedError && !rollbackError) return err;
    if (rollbackError) {
      this.logger.warn(
        `ROLLBACK after the failure of migration ${migration.version} failed too: ${rollbackError.message}`,
      );
    }
    return new SchemaNotMigratedError(
      `Migration ${migration.version} (${migration.name}) of schema ${this.db.schema.quoted} failed: ${(err as Error)?.message ?? String(err)}` +
        (rollbackError ? ` (the ROLLBACK failed too: ${rollbackError.message})` : '') +
        '. Fix the cause and boot again: the migrations that did not complete run again.',
      { cause: err },
    );
  }

  private async currentVersion(executor: {
    query: (text: string) => Promise<{ rows: { version: number | null }[] }>;
  }): Promise<number> {
    const { rows } = await executor.query(this.sql.currentVersion);
    return rows[0]?.version ?? 0;
  }
}
