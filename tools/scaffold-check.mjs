// The scaffold check: what a new user does, run end to end. Makes an app with the official Nest CLI
// (ESM with Vitest, or CommonJS with Jest), installs the packed library into it, adds the quick
// start as README.md and docs/ write it (tools/scaffold-check/templates: an in-process task with an
// injected provider, a typed task with zod schemas, a worker task, a schedule, a bridged `@Cron()`
// method, the health indicator, the testing kit), builds it with the app's own `npm run build`,
// type-checks its tests too, boots `node dist/main` and enqueues over HTTP, then runs the app's own
// e2e test, which uses `nestjs-pg-jobs/testing`, runs a worker task from its TypeScript source and
// enqueues the typed task with its definition (its types checked by the app's own tsconfig).
//
//   node tools/scaffold-check.mjs --type esm|cjs [--keep]   (--keep leaves the app in its temp folder)
//
// Needs the npm registry and PostgreSQL (DATABASE_URL's server, else 127.0.0.1:5432, user postgres):
// it creates a database of its own there and drops it. Runs on the `node` on PATH (.ci/run runs
// it on each Node leg). Exits non-zero on the first failing step, printing that step's output.
/* global AbortSignal, fetch */
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';

/** The CLI a new user runs, pinned so that a CLI release cannot change the check unseen. */
const NEST_CLI = '@nestjs/cli@12.0.15';
/**
 * Jest require()s ES modules from Node 24.9: before, a CommonJS Nest 12 app's Jest cannot load
 * `@nestjs/testing` (an ES module) at all, whatever this package does ("Must use import").
 */
const CJS_MIN_NODE = [24, 9];

const root = fileURLToPath(new URL('../', import.meta.url));
const templates = join(root, 'tools/scaffold-check/templates');
const { values: args } = parseArgs({
  options: { type: { type: 'string' }, keep: { type: 'boolean', default: false } },
});
if (args.type !== 'esm' && args.type !== 'cjs') {
  console.error('usage: node tools/scaffold-check.mjs --type esm|cjs [--keep]');
  process.exit(2);
}
const type = args.type;
const [major, minor] = process.versions.node.split('.').map(Number);
if (
  type === 'cjs' &&
  (major < CJS_MIN_NODE[0] || (major === CJS_MIN_NODE[0] && minor < CJS_MIN_NODE[1]))
) {
  console.error(
    `The CommonJS app's Jest needs Node ${CJS_MIN_NODE.join('.')}+; this is ${process.version}.`,
  );
  process.exit(2);
}

class StepError extends Error {
  constructor(message, output = '') {
    super(message);
    this.output = output;
  }
}

/**
 * Runs a command to its end, its output kept for the report of a failing step. A command still
 * running after `timeout` ms fails the step, and its whole process group is killed: a test runner
 * that never exits (a hook timed out and left the app running) must not hold CI until its limit.
 */
function run(command, commandArgs, { cwd, env = {}, timeout = 10 * 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, commandArgs, {
      cwd,
      env: { ...process.env, ...env },
      detached: true,
    });
    let output = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      process.kill(-child.pid, 'SIGKILL');
    }, timeout);
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const what = `${command} ${commandArgs.join(' ')}`;
      if (timedOut) reject(new StepError(`${what} did not end within ${timeout / 1000} s`, output));
      else if (code === 0) resolve(output);
      else reject(new StepError(`${what} exited with ${code ?? signal}`, output));
    });
  });
}

async function step(name, action) {
  const started = performance.now();
  process.stdout.write(`[scaffold-check ${type}] ${name} ... `);
  try {
    const value = await action();
    console.log(`${((performance.now() - started) / 1000).toFixed(1)} s`);
    return value;
  } catch (error) {
    console.log(`FAILED after ${((performance.now() - started) / 1000).toFixed(1)} s`);
    throw error;
  }
}

/** The database server: DATABASE_URL's, else the local one the repository's tests use too. */
function serverUrl() {
  const url = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  url.pathname = '/postgres';
  return url;
}

async function onServer(sql) {
  const client = new pg.Client({ connectionString: serverUrl().href });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Copies a template folder into the app; a CommonJS app's relative imports carry no `.js`. */
function addTemplates(from, app) {
  cpSync(from, app, { recursive: true });
  if (type === 'esm') return;
  for (const name of readdirSync(from, { recursive: true })) {
    if (!name.endsWith('.ts')) continue;
    const file = join(app, name);
    // ts-jest resolves the files by the names they have (`x.ts`), so Nest's CommonJS scaffold
    // imports them without extension; `tsc` accepts both.
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace(/(['"]\.{1,2}\/[^'"]*)\.js(['"])/g, '$1$2'),
    );
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

async function http(base, path, body) {
  const res = await fetch(new URL(path, base), {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  if (!res.ok) throw new StepError(`${path} answered ${res.status}: ${text}`);
  return JSON.parse(text);
}

function expectEqual(what, actual, expected) {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new StepError(
      `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`,
    );
  }
}

/** Boots `node dist/main`, answers the quick start's calls over HTTP, and stops it. */
async function bootAndEnqueue(app, databaseUrl) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['dist/main'], {
    cwd: app,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port) },
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal)),
  );
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const outcome = await Promise.race([
        exited.then((code) => `exited with ${code}`),
        fetch(`${base}/health`, { signal: AbortSignal.timeout(5_000) }).then(
          (res) => res.status,
          () => undefined,
        ),
      ]);
      if (typeof outcome === 'string')
        throw new StepError(`node dist/main ${outcome} before answering`);
      if (outcome !== undefined) break;
      if (Date.now() > deadline) throw new StepError('node dist/main did not answer within 60 s');
      await sleep(250);
    }
    const mail = await http(base, '/jobs', {
      task: 'sendEmail',
      payload: { to: 'ada@example.com' },
    });
    expectEqual('the in-process task (promise: true)', mail.result, 'sent to ada@example.com');
    const welcome = await http(base, '/jobs', {
      task: 'sendWelcome',
      payload: { to: 'ada@example.com' },
    });
    expectEqual('the typed task (its default applied)', welcome.result, {
      messageId: 'ada@example.com/en',
    });
    const pdf = await http(base, '/jobs', { task: 'renderPdf', payload: { id: '42' } });
    expectEqual('the worker task (promise: true)', pdf.result.pdf, 'report-42.pdf');
    if (!(pdf.result.thread > 0))
      throw new StepError(`renderPdf ran on thread ${pdf.result.thread}, not in a pool thread`);
    expectEqual('the schedules', await http(base, '/jobs/schedules'), [
      'hourlyDigest',
      'nightlyReport',
    ]);
    const nightly = await http(base, '/jobs/schedules/nightlyReport/trigger', {});
    expectEqual(
      'the @Cron() method, triggered',
      [nightly.task, nightly.state],
      ['nightlyReport', 'completed'],
    );
    const health = await http(base, '/health');
    expectEqual('the health check', [health.status, health.info?.jobs?.workerPool], ['ok', 'up']);
  } catch (error) {
    if (error instanceof StepError) error.output = output;
    throw error;
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

const work = mkdtempSync(join(tmpdir(), `scaffold-check-${type}-`));
const app = join(work, `${type}-app`);
const database = `scaffold_check_${type}_${process.pid}_${Date.now().toString(36)}`;
const databaseUrl = Object.assign(serverUrl(), { pathname: `/${database}` }).href;
const versions = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const pinned = (name) => `${name}@${versions.dependencies[name] ?? versions.devDependencies[name]}`;
let databaseCreated = false;
const started = performance.now();
console.log(`[scaffold-check ${type}] Node ${process.version}, in ${work}`);

try {
  const tarball = await step('pack the library', async () => {
    // Built where the repository's own packages resolve (its declaration check needs them).
    await run('npm', ['run', 'build'], { cwd: root });
    const packed = await run(
      'npm',
      ['pack', join(root, 'dist/jobs'), '--pack-destination', work, '--json'],
      { cwd: work },
    );
    return join(work, JSON.parse(packed.slice(packed.indexOf('[')))[0].filename);
  });
  await step('create the database', async () => {
    await onServer(`CREATE DATABASE "${database}"`);
    databaseCreated = true;
  });
  await step(`nest new (${NEST_CLI}, --type ${type})`, () =>
    run(
      'npx',
      [
        '--yes',
        NEST_CLI,
        'new',
        `${type}-app`,
        '--type',
        type,
        '--package-manager',
        'npm',
        '--skip-git',
        '--no-interactive',
        // Both would reach beyond the npm registry; neither changes what the app does with the package.
        '--no-observe',
        '--skip-skills',
      ],
      { cwd: work },
    ),
  );
  await step('npm install the tarball, pg, the peers the quick start needs and zod', () =>
    run(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        tarball,
        pinned('pg'),
        pinned('@nestjs/schedule'),
        pinned('@nestjs/terminus'),
        pinned('zod'), // the typed task's schemas (docs/tasks.md)
      ],
      { cwd: app },
    ),
  );
  await step('add the quick start', () => {
    addTemplates(join(templates, 'shared'), app);
    addTemplates(join(templates, type), app);
  });
  await step('npm run build', () => run('npm', ['run', 'build'], { cwd: app }));
  // What the user's editor says of src/ and test/: the runners transpile without type-checking.
  await step('tsc --noEmit -p tsconfig.json (src and test)', () =>
    run('npx', ['tsc', '--noEmit', '-p', 'tsconfig.json'], { cwd: app }),
  );
  await step('node dist/main: enqueue over HTTP with promise: true', () =>
    bootAndEnqueue(app, databaseUrl),
  );
  await step(`npm run test:e2e (${type === 'esm' ? 'Vitest' : 'Jest'})`, () =>
    run('npm', ['run', 'test:e2e'], {
      cwd: app,
      env: { DATABASE_URL: databaseUrl },
      timeout: 3 * 60_000,
    }),
  );
  console.log(
    `[scaffold-check ${type}] passed in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
} catch (error) {
  console.error(`\n${error.message}\n${error.output ?? error.stack ?? ''}`);
  process.exitCode = 1;
} finally {
  if (databaseCreated)
    await onServer(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`).catch(() => {});
  if (args.keep) console.log(`[scaffold-check ${type}] kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}
