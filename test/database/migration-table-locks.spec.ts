import { Logger } from '@nestjs/common';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { jobsMigrations, MigrationBlockedError } from 'nestjs-pg-jobs';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { resolveJobsOptions } from '../../libs/jobs/src/options/resolve-options.js';
import { SchemaMigrator } from '../../libs/jobs/src/schema/schema-migrator.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { withDeadline } from '../support/deadline.js';

/*
 * An upgrade meets a fleet at work: some session holds a transaction open on the queue's tables (a
 * transactional task that enqueued with ctx.manager, an app's addJob({ manager })). The migration's
 * ALTER TABLE must not make every enqueue and claim wait for that transaction to end.
 */
const db = useTestDatabase();
/** Seconds the migration's statements wait for a table lock in these tests. */
const TABLE_LOCK_TIMEOUT = 0.3;

let database: JobsDatabase;
const warnings: string[] = [];
const clients: pg.Client[] = [];

beforeAll(async () => {
  Logger.overrideLogger({
    log: () => undefined,
    error: () => undefined,
    warn: (message: unknown) => void warnings.push(String(message)),
  });
  database = await JobsDatabase.connect(
    resolveJobsOptions({ connection: db.url, schema: 'locks' }),
  );
  // Migration 10 alters `jobs`, migration 11 alters `jobHistory`, both in a transaction.
  await new SchemaMigrator(database).migrate(9);
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
  await database?.close();
  Logger.overrideLogger(new Logger());
});

async function connect(applicationName: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: db.url, application_name: applicationName });
  client.on('error', () => undefined);
  await client.connect();
  clients.push(client);
  return client;
}

/** An open transaction that touched `table` (and holds its lock until it ends). */
async function holdTransactionOn(
  table: 'jobs' | 'jobHistory',
  schema = 'locks',
): Promise<pg.Client> {
  const holder = await connect('app-transaction');
  await holder.query('BEGIN');
  if (table === 'jobs') {
    await holder.query(
      `INSERT INTO ${schema}.jobs (id, task, "maxRetries") VALUES (gen_random_uuid(), 'held', 0)`,
    );
  } else {
    await holder.query(`SELECT count(*) FROM ${schema}."jobHistory"`);
  }
  return holder;
}

/** An enqueue of the fleet, on a connection of its own; resolves to how long it took (ms). */
async function enqueueBeside(schema = 'locks'): Promise<number> {
  const fleet = await connect('fleet-enqueue');
  const startedAt = Date.now();
  await fleet.query(
    `INSERT INTO ${schema}.jobs (id, task, "maxRetries") VALUES (gen_random_uuid(), 'fleet', 0)`,
  );
  return Date.now() - startedAt;
}

async function version(): Promise<number> {
  const [{ version }] = await db.query<{ version: number }>(
    'SELECT max(version) AS version FROM locks.migrations',
  );
  return version;
}

/** What `promise` resolves to, or 'still blocked' if it has not after `ms`. */
function within<T>(ms: number, promise: Promise<T>): Promise<T | 'still blocked'> {
  return withDeadline(promise, ms, () => 'still blocked' as const);
}

/** Whether the migration's session is waiting for a lock right now. */
async function migrationWaitsForLock(): Promise<boolean> {
  const rows = await db.query(
    `SELECT 1 FROM pg_stat_activity WHERE application_name LIKE '%migrate%' AND wait_event_type = 'Lock'`,
  );
  return rows.length > 0;
}

/** Whether some session waits for a lock on `schema`.jobs behind the holder (an ALTER TABLE). */
function migrationTableWaitsFor(schema: string) {
  return async () =>
    (
      await db.query(
        `SELECT 1 FROM pg_locks WHERE NOT granted AND relation = $1::regclass AND mode = 'AccessExclusiveLock'`,
        [`${schema}.jobs`],
      )
    ).length > 0;
}

it('lets an enqueue through while it waits behind an open transaction, and completes once that transaction commits', async () => {
  const holder = await holdTransactionOn('jobs');
  const migrating = new SchemaMigrator(database, {
    tableLockTimeout: TABLE_LOCK_TIMEOUT,
  }).migrate(10);
  migrating.catch(() => undefined);
  await waitFor("the migration's ALTER TABLE to wait for its lock", migrationWaitsForLock);

  const enqueue = enqueueBeside();
  const outcome = await within(10_000, enqueue);
  // Before the holder commits: the enqueue waited at most one lock_timeout of the migration.
  expect(outcome).not.toBe('still blocked');
  expect(outcome).toBeLessThan(TABLE_LOCK_TIMEOUT * 1000 + 2000);
  expect(await version()).toBe(9);

  await waitFor('a retry to be logged', () =>
    warnings.some((w) => w.startsWith('Migration 10 waited 300ms for a table lock')),
  );
  expect(warnings.find((w) => w.startsWith('Migration 10 waited'))).toMatch(
    /held by: pid \d+ \(app-transaction\), idle in transaction for [\d.]+s: INSERT INTO locks\.jobs/,
  );

  await holder.query('COMMIT');
  expect(await migrating).toBe(1);
  expect(await version()).toBe(10);
  await enqueue;
});

it('gives up after its tries with MigrationBlockedError naming the session that blocks it, and applies nothing', async () => {
  const holder = await holdTransactionOn('jobHistory');
  const migrator = new SchemaMigrator(database, {
    tableLockTimeout: TABLE_LOCK_TIMEOUT,
    tableLockTries: 2,
  });
  const blocked = migrator.migrate(11);
  await expect(blocked).rejects.toThrow(MigrationBlockedError);
  await expect(blocked).rejects.toThrow(
    /Migration 11 of schema "locks" could not take its table locks in 2 tries .*pid \d+ \(app-transaction\), idle in transaction/,
  );
  expect(await version()).toBe(10);
  // The failed tries left no lock_timeout or savepoint behind: once the holder is gone, it applies.
  await holder.query('COMMIT');
  expect(await migrator.migrate(11)).toBe(1);
});

/** An app's TypeORM `DataSource` that runs the library's first `versions` migrations. */
function typeormWith(versions: number): Promise<DataSource> {
  return new DataSource({
    type: 'postgres',
    url: db.url,
    migrations: jobsMigrations('typeorm_locks').slice(0, versions),
    migrationsTransactionMode: 'each',
  }).initialize();
}

it('runs the TypeORM migration classes under the same lock timeout and retries (jobsMigrations)', async () => {
  const before = await typeormWith(9);
  await before.runMigrations();
  await before.destroy();
  const holder = await holdTransactionOn('jobs', 'typeorm_locks');
  const dataSource = await typeormWith(10);
  try {
    const migrating = dataSource.runMigrations();
    migrating.catch(() => undefined);
    await waitFor(
      'the TypeORM migration to wait for its lock',
      migrationTableWaitsFor('typeorm_locks'),
    );
    const outcome = await within(10_000, enqueueBeside('typeorm_locks'));
    expect(outcome).not.toBe('still blocked');
    // The classes wait the default migrationTableLockTimeout, 1 s.
    expect(outcome).toBeLessThan(1000 + 2000);
    await waitFor('a retry to be logged', () =>
      warnings.some((w) => w.startsWith('Migration 10 waited 1000ms for a table lock')),
    );
    await holder.query('COMMIT');
    expect((await migrating).map((migration) => migration.name)).toEqual([
      'NestjsPgJobs_typeorm_locks_v10_1000000000010',
    ]);
  } finally {
    await dataSource.destroy();
  }
});
