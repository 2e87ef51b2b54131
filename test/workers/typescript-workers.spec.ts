import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { installCompiledPackage } from '../support/compiled-package.js';
import type { CompiledApp } from '../support/compiled-package.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let app: CompiledApp;

// Two apps on the built package, as an app's tests run them: an ESM app (`"type": "module"`) and a
// CommonJS one, each with a worker module written in TypeScript only (no `.js` beside it), whose
// task gets a provider injected by its type through a parameter property. Their main files are
// plain JavaScript (what a test runner makes of the app's test is not what is tested here) and name
// `workerModule` exactly as the README does; no loader is passed to any thread.
beforeAll(async () => {
  app = await installCompiledPackage('typescript-workers', ['typescript']);
}, 180_000);
afterAll(() => app?.remove());

it('runs a TypeScript worker module of an ESM app, its provider injected by type', async () => {
  const { stdout, stderr, code } = await app.node('esm/main.mjs', [], { DATABASE_URL: db.url });
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  // `import.meta.url` in the provider: the thread loaded the `.ts` file as ESM.
  expect(JSON.parse(stdout)).toBe('hello esm, from greeter.ts');
});

it('runs a TypeScript worker module of a CommonJS app, with extensionless and .js imports', async () => {
  const { stdout, stderr, code } = await app.node('cjs/main.cjs', [], { DATABASE_URL: db.url });
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  // `__filename` in the provider: the thread loaded the `.ts` file as CommonJS.
  expect(JSON.parse(stdout)).toBe('hello cjs, from greeter.ts');
});

// Last: it uninstalls typescript from the app.
it('fails the boot with MissingPeerDependencyError when the app has no typescript', async () => {
  expect(app.manifest.peerDependenciesMeta?.typescript).toEqual({ optional: true });
  rmSync(join(app.dir, 'node_modules', 'typescript'));
  const { stderr, code } = await app.node('esm/main.mjs', [], { DATABASE_URL: db.url });
  expect(code).not.toBe(0);
  expect(stderr).toContain('MissingPeerDependencyError');
  expect(stderr).toMatch(
    /A workerModule written in TypeScript needs the package "typescript", which is not installed: .*npm install typescript/,
  );
});
