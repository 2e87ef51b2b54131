// Finds (or starts) the PostgreSQL server for the whole run; each test file makes its own database
// on it. Jest loads this file natively, outside its module system, so the TypeScript tooling comes
// in through the same loader `npm start` uses.
import { register } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

register('../../tools/ts-loader/hooks.mjs', import.meta.url);

export default async function globalSetup() {
  const { resolveDatabaseServer } = await import('../../tools/dev-database.ts');
  const server = await resolveDatabaseServer(
    join(tmpdir(), 'nestjs-pg-jobs-test', `pg-${process.pid}`),
  );
  process.env.JOBS_TEST_SERVER_URL = server.url;
  globalThis.__jobsTestServer = server;
  console.log(`\nTests use PostgreSQL from ${server.source}.`);
}
