import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Test } from '@nestjs/testing';
import pg from 'pg';
import { DataSource } from 'typeorm';
import {
  DatabaseUnreachableError,
  JobsModule,
  MigrationLockTimeoutError,
  SchemaNotMigratedError,
} from 'nestjs-pg-jobs';
import type { JobsModuleOptions } from 'nestjs-pg-jobs';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { resolveJobsOptions } from '../../libs/jobs/src/options/resolve-options.js';
import { SchemaMigrator } from '../../libs/jobs/src/schema/schema-migrator.js';
import { TcpProxy } from '../fixtures/instance/tcp-proxy.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

async function boot(options: Partial<JobsModuleOptions>) {
  const module = await Test.createTestingModule({
    imports: [JobsModule.forRoot({ connection: db.url, ...options } as JobsModuleOptions)],
  })
    .setLogger(false as never)
    .compile();
  await module.init();
  return module;
}

/** A port on this host that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the migration lock', () => {
  it('is waited for at most migrationLockTimeout, then the boot fails saying another instance holds it', async () => {
    // What a peer mid-migration (or a hung one) looks like: a session holding the schema's lock.
    const holder = new pg.Client({ connectionString: db.url, application_name: 'peer-migrating' });
    holder.on('error', () => undefined);
    await holder.connect();
    try {
      await holder.query(`SELECT pg_advisory_lock(hashtextextended($1, 0))`, [
        'nestjs-pg-jobs:migrate:locked',
      ]);
      const started = Date.now();
      const attempt = boot({ schema: 'locked', migrationLockTimeout: 0.5 });
      await expect(attempt).rejects.toThrow(MigrationLockTimeoutError);
      await expect(attempt).rejects.toThrow(
        /Another instance holds the migration lock of schema "locked" and did not release it within 0.5s \(migrationLockTimeout\); held by: peer-migrating/,
      );
      expect(Date.now() - started).toBeLessThan(10_000);
      // Nothing was migrated behind the lock's back.
      const [{ exists }] = await db.query<{ exists: boolean }>(
        `SELECT to_regclass('locked.migrations') IS NOT NULL AS exists`,
      );
      expect(exists).toBe(false);
    } finally {
      await holder.end();
    }
  });

  it('is taken once the holder lets go, and the migration runs', async () => {
    const holder = new pg.Client({ connectionString: db.url });
    holder.on('error', () => undefined);
    await holder.connect();
    await holder.query(`SELECT pg_advisory_lock(hashtextextended($1, 0))`, [
      'nestjs-pg-jobs:migrate:released',
    ]);
    const booting = boot({ schema: 'released', migrationLockTimeout: 30 });
    await waitFor('the booting instance to have tried the lock', async () => {
      const [{ tried }] = await db.query<{ tried: number }>(
        `SELECT count(*)::int AS tried FROM pg_stat_activity
         WHERE application_name LIKE '%:migrate' AND query LIKE '%pg_try_advisory_lock%'`,
      );
      return tried > 0;
    });
    await holder.end();
    const module = await booting;
    await module.close();
    const rows = await db.query(`SELECT version FROM released.migrations`);
    expect(rows.length).toBeGreaterThan(0);
  });

  it('refuses a migrationLockTimeout that is not a positive number of seconds', async () => {
    await expect(boot({ migrationLockTimeout: 0 })).rejects.toThrow(
      /"migrationLockTimeout" must be a positive number of seconds; got 0/,
    );
  });
});

describe('with migrate: false, an unreachable database is not mistaken for an old schema', () => {
  it('when it refuses the connection at boot', async () => {
    const url = new URL(db.url);
    url.port = String(await closedPort());
    const attempt = boot({ connection: url.toString(), migrate: false });
    await expect(attempt).rejects.toThrow(DatabaseUnreachableError);
    await expect(attempt).rejects.toThrow(
      /The database is unreachable while connecting: .*ECONNREFUSED/,
    );
  });

  it('when it goes away between the connection and the schema check', async () => {
    // A shared DataSource the app initialised earlier, whose database is now out of reach.
    const target = new URL(db.url);
    const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.up();
    const dataSource = new DataSource({
      type: 'postgres',
      extra: { connectionString: proxy.rewrite(db.url), connectionTimeoutMillis: 2000 },
    });
    await dataSource.initialize();
    try {
      await proxy.down();
      const attempt = boot({ connection: undefined, dataSource, migrate: false });
      await expect(attempt).rejects.toThrow(DatabaseUnreachableError);
      await expect(attempt).rejects.toThrow(
        /The database is unreachable while checking the version of schema "jobs"/,
      );
      await expect(attempt).rejects.not.toThrow(/version 0/);
    } finally {
      await dataSource.destroy().catch(() => undefined);
    }
  });

  it('while a schema that does not exist still reads as version 0', async () => {
    const attempt = boot({ schema: 'absent', migrate: false });
    await expect(attempt).rejects.toThrow(SchemaNotMigratedError);
    await expect(attempt).rejects.toThrow(/"absent" is at version 0/);
  });
});

it("a migration whose connection dies fails with the migration's error, not the ROLLBACK's", async () => {
  const database = await JobsDatabase.connect(
    resolveJobsOptions({ connection: db.url, schema: 'cut_off' }),
  );
  try {
    const migrator = new SchemaMigrator(database, {
      migrations: [
        {
          version: 1,
          name: 'loses its connection',
          sql: () =>
            `CREATE TABLE cut_off.t (id int); SELECT pg_terminate_backend(pg_backend_pid())`,
        },
      ],
    });
    const attempt = migrator.migrate();
    await expect(attempt).rejects.toThrow(SchemaNotMigratedError);
    await expect(attempt).rejects.toThrow(
      /^Migration 1 \(loses its connection\) of schema "cut_off" failed: terminating connection due to administrator command \(the ROLLBACK failed too: .+\)/,
    );
    // The server rolled the transaction back with the session.
    const [{ exists }] = await db.query<{ exists: boolean }>(
      `SELECT to_regclass('cut_off.t') IS NOT NULL AS exists`,
    );
    expect(exists).toBe(false);
  } finally {
    await database.close();
  }
});
