import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { useTestDatabase } from './support/test-database.js';

const run = promisify(execFile);
const db = useTestDatabase();

it('runs in-process and worker-thread jobs from the compiled package, with no TypeScript loader', async () => {
  await run(process.execPath, ['tools/build-lib.mjs'], { timeout: 120_000 });
  // A process of its own: no ts-jest, no loader, only dist/jobs and plain JavaScript.
  const { stdout } = await run(process.execPath, ['test/fixtures/compiled/main.mjs'], {
    env: { ...process.env, DATABASE_URL: db.url, NODE_OPTIONS: '' },
    timeout: 60_000,
  });
  expect(stdout.trim()).toBe('ok');
  const rows = await db.query(`SELECT task, state FROM jobs."jobHistory" ORDER BY task`);
  expect(rows).toEqual([
    { task: 'compiled.double', state: 'completed' },
    { task: 'compiled.echo', state: 'completed' },
  ]);
}, 180_000);
