import { installCompiledPackage } from '../support/compiled-package.js';
import type { CompiledApp } from '../support/compiled-package.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let app: CompiledApp;

// A process of its own: no ts-jest, no loader, only the built package and plain JavaScript, in an
// app that installed neither prom-client nor @nestjs/platform-express (optional peers). TypeORM is
// there for the type-check with `skipLibCheck: false`: the declarations name its types (a
// `dataSource`, `ctx.manager`); test/package/published-package.spec.ts loads the package without it.
beforeAll(async () => {
  app = await installCompiledPackage('compiled', [
    'typescript',
    '@types/node',
    '@types/pg',
    'typeorm',
  ]);
}, 180_000);
afterAll(() => app?.remove());

it('runs in-process and worker-thread jobs from the compiled package, with no TypeScript loader', async () => {
  const { stdout, stderr, code } = await app.node('main.mjs', [], { DATABASE_URL: db.url });
  // One assertion, so that a failure shows all three (a hang: what kept the process alive).
  expect({ code, stderr, stdout: stdout.trim() }).toEqual({ code: 0, stderr: '', stdout: 'ok' });
  const rows = await db.query(`SELECT task, state FROM jobs."jobHistory" ORDER BY task`);
  expect(rows).toEqual([
    { task: 'compiled.double', state: 'completed' },
    { task: 'compiled.echo', state: 'completed' },
  ]);
});

it('lists prom-client and @nestjs/platform-express as optional peers, and boots without them', async () => {
  for (const name of ['prom-client', '@nestjs/platform-express']) {
    expect(app.manifest.dependencies?.[name]).toBeUndefined();
    expect(app.manifest.peerDependencies?.[name]).toBeDefined();
    expect(app.manifest.peerDependenciesMeta?.[name]).toEqual({ optional: true });
  }
  const { stdout, code } = await app.node('optional-peers.mjs', [], { DATABASE_URL: db.url });
  expect(code).toBe(0);
  const outcomes = JSON.parse(stdout);
  expect(outcomes.none).toBe('booted');
  expect(outcomes.metrics).toEqual({
    peerMissing: true,
    packageName: 'prom-client',
    message: expect.stringMatching(
      /^JobsMetricsModule needs the package "prom-client", which is not installed: .*npm install prom-client/,
    ),
  });
  expect(outcomes.admin).toEqual({
    peerMissing: true,
    packageName: '@nestjs/platform-express',
    message: expect.stringMatching(
      /^JobsAdminModule needs the package "@nestjs\/platform-express", which is not installed: .*@nestjs\/platform-fastify/,
    ),
  });
});

it('type-checks a TypeScript app against the declarations without the optional peers', async () => {
  const { stdout, code } = await app.node('node_modules/typescript/bin/tsc', ['-p', '.']);
  expect(stdout).toBe('');
  expect(code).toBe(0);
});
