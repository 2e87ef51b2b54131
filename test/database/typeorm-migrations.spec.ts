import { DataSource } from 'typeorm';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import {
  IrreversibleMigrationError,
  JobHistoryEntity,
  jobsEntities,
  jobsMigrations,
} from 'nestjs-pg-jobs';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../../libs/jobs/src/schema/migrations.js';
import { SchemaMigrator } from '../../libs/jobs/src/schema/schema-migrator.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { recording } from '../support/recorder.js';
import { useTestDatabase } from '../support/test-database.js';

/**
 * An app with `migrate: false` runs the library's migrations in its own TypeORM pipeline, beside
 * its own migrations, with `jobsMigrations(schema)`.
 */
const db = useTestDatabase();
const dataSources: DataSource[] = [];
afterEach(async () => {
  await Promise.all(dataSources.splice(0).map((ds) => ds.destroy()));
});

/** One of the app's own migrations, made with TypeORM's usual `Date.now()` timestamp. */
class CreateOrders1767225600000 implements MigrationInterface {
  async up(runner: QueryRunner): Promise<void> {
    await runner.query('CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL)');
  }
  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE orders');
  }
}

async function appDataSource(
  schema: string,
  extra: { migrations?: (new () => MigrationInterface)[] } = {},
) {
  const dataSource = new DataSource({
    type: 'postgres',
    url: db.url,
    entities: Object.values(jobsEntities(schema)),
    migrations: extra.migrations ?? [...jobsMigrations(schema), CreateOrders1767225600000],
    // The library's concurrent index builds set `transaction = false`, which 'all' refuses.
    migrationsTransactionMode: 'each',
    // TypeORM logs a failed migration whatever `logging` says; the tests assert on the errors.
    logger: {
      logQuery() {},
      logQueryError() {},
      logQuerySlow() {},
      logSchemaBuild() {},
      logMigration() {},
      log() {},
    },
  });
  dataSources.push(dataSource);
  return dataSource.initialize();
}

const schemaVersion = async (schema: string) =>
  (
    await db.query<{ version: number }>(`SELECT max(version) AS version FROM ${schema}.migrations`)
  )[0].version;

it("builds, from the app's own runMigrations(), a schema that JobsModule with migrate: false runs on", async () => {
  const dataSource = await appDataSource('app_jobs');
  const ran = await dataSource.runMigrations();
  // The library's first, in version order, then the app's.
  expect(ran.map((m) => m.name)).toEqual([
    ...MIGRATIONS.map((m) =>
      expect.stringMatching(new RegExp(`^NestjsPgJobs_app_jobs_v${m.version}_\\d{13}$`)),
    ),
    'CreateOrders1767225600000',
  ]);
  expect(await schemaVersion('app_jobs')).toBe(LATEST_SCHEMA_VERSION);
  // The concurrent index builds ran outside a transaction (inside one they fail) and are valid.
  // A history index made ON ONLY the partitioned parent (relkind 'I') is invalid until the
  // partition upkeep of the first instance that runs jobs builds it on each partition.
  const invalidIndexes = (relkind: 'i' | 'I') =>
    db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'app_jobs' AND NOT i.indisvalid AND c.relkind = $1`,
      [relkind],
    );
  expect(await invalidIndexes('i')).toEqual([]);
  expect(await invalidIndexes('I')).toEqual([{ name: 'job_history_unique_key' }]);
  expect(await dataSource.runMigrations()).toEqual([]);

  const app = await startJobsApp(db.url, {
    ...recording('typeorm-migrated'),
    options: { schema: 'app_jobs', migrate: false },
  });
  const { id, promise } = await app.queue.addJob({ task: 'record', promise: true });
  await promise;
  await waitFor('the partition upkeep to complete the history index', async () => {
    return (await invalidIndexes('I')).length === 0;
  });
  expect(await invalidIndexes('i')).toEqual([]);
  // Read back through the entity bound to the schema, with the app's DataSource.
  const { JobHistoryEntity: AppJobHistory } = jobsEntities('app_jobs');
  const row = await dataSource.getRepository(AppJobHistory).findOneByOrFail({ id });
  expect(row).toMatchObject({ task: 'record', state: 'completed', attempt: 1 });
  await app.close();
});

it('skips the versions the module already applied, and applies the rest', async () => {
  // A schema the module migrated (part way), before the app moved its migrations to TypeORM.
  const jobsDb = await JobsDatabase.connect({
    connection: { connectionString: db.url },
    schema: toSchemaName('jobs'),
    instanceId: 'earlier-boot',
    preparedStatements: false,
  });
  await new SchemaMigrator(jobsDb).migrate(3);
  await jobsDb.close();

  const dataSource = await appDataSource('jobs', { migrations: jobsMigrations() });
  const ran = await dataSource.runMigrations();
  expect(ran).toHaveLength(MIGRATIONS.length);
  expect(
    await db.query<{ version: number }>(`SELECT version FROM jobs.migrations ORDER BY version`),
  ).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));

  const app = await startJobsApp(db.url, {
    ...recording('default-schema'),
    options: { migrate: false },
  });
  const { id, promise } = await app.queue.addJob({ task: 'record', promise: true });
  await promise;
  // The exported classes map the default schema.
  const row = await dataSource.getRepository(JobHistoryEntity).findOneByOrFail({ id });
  expect(row.state).toBe('completed');
  await app.close();
});

it('commits a migration with its version row even when TypeORM opens no transaction', async () => {
  // The version row of migration 2 cannot be written: its changes must not stay behind either.
  await db.query(`CREATE SCHEMA no_tx`);
  await db.query(
    `CREATE TABLE no_tx.migrations (version integer PRIMARY KEY CHECK (version <> 2), name text NOT NULL,
     "appliedAt" timestamptz NOT NULL DEFAULT now())`,
  );
  const dataSource = await appDataSource('no_tx', { migrations: jobsMigrations('no_tx') });
  await expect(dataSource.runMigrations({ transaction: 'none' })).rejects.toThrow(
    /migrations_version_check/,
  );
  expect(await schemaVersion('no_tx')).toBe(1);
  expect(
    await db.query(
      `SELECT column_name FROM information_schema.columns
       WHERE table_schema = 'no_tx' AND table_name = 'jobSchedule' AND column_name = 'timezone'`,
    ),
  ).toEqual([]);
});

it('refuses to revert: the migrations only go forward', async () => {
  const dataSource = await appDataSource('forward', { migrations: jobsMigrations('forward') });
  await dataSource.runMigrations();
  await expect(dataSource.undoLastMigration()).rejects.toThrow(IrreversibleMigrationError);
  expect(await schemaVersion('forward')).toBe(LATEST_SCHEMA_VERSION);
});

it('maps every column of every table the entities name, so reports see what the migrations made', async () => {
  const dataSource = await appDataSource('mapped', { migrations: jobsMigrations('mapped') });
  await dataSource.runMigrations();
  for (const entity of Object.values(jobsEntities('mapped'))) {
    const metadata = dataSource.getMetadata(entity);
    const rows = await db.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns
       WHERE table_schema = 'mapped' AND table_name = $1`,
      [metadata.tableName],
    );
    expect([metadata.tableName, ...metadata.columns.map((c) => c.databaseName).sort()]).toEqual([
      metadata.tableName,
      ...rows.map((row) => row.column_name).sort(),
    ]);
  }
});
