import { Logger } from '@nestjs/common';
import type { JobsDatabase } from '../database/jobs-database.js';
import { SchemaNotMigratedError } from '../errors/jobs.errors.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from './migrations.js';

/**
 * Brings the module's schema up to date. Instances that boot together serialise on a session
 * advisory lock (TypeORM's own migrations take none); each migration commits with its version row,
 * so a failure leaves the schema at the last good version.
 */
export class SchemaMigrator {
  private readonly logger = new Logger('JobsSchema');

  constructor(private readonly db: JobsDatabase) {}

  async migrate(): Promise<number> {
    const { name, quoted } = this.db.schema;
    const client = this.db.createSessionClient('migrate');
    client.on('error', (err) => this.logger.warn(`Migration connection error: ${err.message}`));
    await client.connect();
    try {
      await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [
        `nestjs-pg-jobs:migrate:${name}`,
      ]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${quoted}.migrations (
           version integer PRIMARY KEY,
           name text NOT NULL,
           "appliedAt" timestamptz NOT NULL DEFAULT now()
         )`,
      );
      const current = await this.currentVersion(client);
      let applied = 0;
      for (const migration of MIGRATIONS.filter((m) => m.version > current)) {
        await client.query('BEGIN');
        try {
          await client.query(migration.sql(this.db.schema));
          await client.query(`INSERT INTO ${quoted}.migrations (version, name) VALUES ($1, $2)`, [
            migration.version,
            migration.name,
          ]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw new SchemaNotMigratedError(
            `Migration ${migration.version} (${migration.name}) of schema ${quoted} failed: ${(err as Error).message}`,
            { cause: err },
          );
        }
        applied++;
        this.logger.log(`Applied migration ${migration.version}: ${migration.name}`);
      }
      return applied;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** With `migrate: false`: fail the boot now rather than on the first job. */
  async assertCurrent(): Promise<void> {
    const { quoted } = this.db.schema;
    const version = await this.currentVersion(this.db.pool).catch(() => 0);
    if (version < LATEST_SCHEMA_VERSION) {
      throw new SchemaNotMigratedError(
        `Schema ${quoted} is at version ${version}, this library needs ${LATEST_SCHEMA_VERSION}, and "migrate" is false. ` +
          'Boot one instance with migrate: true, or apply the migrations yourself.',
      );
    }
  }

  private async currentVersion(executor: {
    query: (text: string) => Promise<{ rows: { version: number | null }[] }>;
  }): Promise<number> {
    const { rows } = await executor.query(
      `SELECT max(version) AS version FROM ${this.db.schema.quoted}.migrations`,
    );
    return rows[0]?.version ?? 0;
  }
}
