import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { useTestDatabase } from '../support/test-database.js';

const run = promisify(execFile);
const db = useTestDatabase();

/** Runs test/fixtures/lean-boot in a process of its own; returns what it printed. */
async function bootAndRunOneJob(mode: 'plain' | 'features') {
  const { stdout } = await run(
    process.execPath,
    [
      '--import',
      resolve('tools/ts-loader/register.mjs'),
      resolve('test/fixtures/lean-boot/main.ts'),
      mode,
    ],
    { env: { ...process.env, DATABASE_URL: db.url, NODE_OPTIONS: '' }, timeout: 90_000 },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

// What a process loads is what it keeps in memory: the packages that only some features need are
// loaded by those features, not by importing the library or booting it with `connection`.
it('boots with `connection` and runs a job without loading TypeORM, prom-client or cron-parser', async () => {
  expect(await bootAndRunOneJob('plain')).toEqual({
    ran: 'ran',
    typeorm: false,
    'prom-client': false,
    'cron-parser': false,
  });
}, 120_000);

it("loads each with the feature that needs it: a transactional task's ctx.manager, the metrics module, a schedule", async () => {
  expect(await bootAndRunOneJob('features')).toEqual({
    ran: 'ran',
    typeorm: true,
    'prom-client': true,
    'cron-parser': true,
  });
}, 120_000);
