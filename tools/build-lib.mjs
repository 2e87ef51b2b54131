// Builds the publishable library into dist/jobs: compiled ESM with declarations (`@internal`
// members stripped, and no internal type reachable from the index: tools/check-declarations.mjs),
// and a package.json whose `exports` a user installs as `nestjs-pg-jobs`.
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const out = new URL('dist/jobs/', root);
const monorepo = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
const pin = (name) => monorepo.dependencies[name];

/** Runs a Node script of the repository; its failure, which it has reported, fails the build. */
function step(...args) {
  const { status } = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (status !== 0) process.exit(status ?? 1);
}

rmSync(out, { recursive: true, force: true });
step('node_modules/typescript/bin/tsc', '-p', 'libs/jobs/tsconfig.lib.json');
step(
  'tools/check-declarations.mjs',
  'dist/jobs/index.d.ts',
  'dist/jobs/schedule-bridge/index.d.ts',
  'dist/jobs/health/index.d.ts',
);

const manifest = {
  name: 'nestjs-pg-jobs',
  version: monorepo.version,
  description: monorepo.description,
  license: monorepo.license,
  type: 'module',
  engines: monorepo.engines,
  exports: {
    '.': { types: './index.d.ts', import: './index.js' },
    // Apart from the main entry: the only files that import the optional @nestjs/schedule.
    './schedule': { types: './schedule-bridge/index.d.ts', import: './schedule-bridge/index.js' },
    // The only files that import the optional @nestjs/terminus.
    './health': { types: './health/index.d.ts', import: './health/index.js' },
  },
  main: './index.js',
  types: './index.d.ts',
  sideEffects: false,
  dependencies: {
    'cron-parser': pin('cron-parser'),
    poolifier: pin('poolifier'),
    'prom-client': pin('prom-client'),
  },
  peerDependencies: {
    '@nestjs/common': '^12.0.0',
    '@nestjs/core': '^12.0.0',
    pg: '^8.11.0',
    'reflect-metadata': '^0.2.0',
    rxjs: '^7.1.0',
    typeorm: '^1.0.0',
    '@nestjs/schedule': '^12.0.0',
    '@opentelemetry/api': '^1.3.0',
    '@nestjs/terminus': '^12.0.0',
  },
  // Only apps that import nestjs-pg-jobs/schedule (JobsScheduleModule) need @nestjs/schedule;
  // @opentelemetry/api is imported only when installed, to trace jobs (the `telemetry` option);
  // @nestjs/terminus only by apps that import nestjs-pg-jobs/health (JobsHealthIndicator).
  peerDependenciesMeta: {
    '@nestjs/schedule': { optional: true },
    '@opentelemetry/api': { optional: true },
    '@nestjs/terminus': { optional: true },
  },
};
writeFileSync(new URL('package.json', out), JSON.stringify(manifest, null, 2) + '\n');
copyFileSync(new URL('README.md', root), new URL('README.md', out));
console.log(`Built ${manifest.name}@${manifest.version} into dist/jobs`);
