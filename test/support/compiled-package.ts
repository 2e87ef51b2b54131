import { execFile, spawn } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = process.cwd();
/** How long an app's process may run (below Jest's testTimeout, jest.config.mjs). */
const CHILD_TIMEOUT_MS = 60_000;
/** How long a hung process is given to write its diagnostic report before it is killed. */
const REPORT_WAIT_MS = 3_000;

export interface CompiledApp {
  /** The app's folder: its `node_modules` holds the package and what it needs, nothing else. */
  readonly dir: string;
  /** `<dir>/node_modules/nestjs-pg-jobs`: the built package. */
  readonly packageDir: string;
  /** The built package's package.json. */
  readonly manifest: {
    bin?: Record<string, string>;
    dependencies?: Record<string, string>;
    peerDependencies?: Record<string, string>;
    peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  };
  /** Runs `node <file> ...args` in the app's folder, with no TypeScript loader. */
  node(
    file: string,
    args?: readonly string[],
    env?: NodeJS.ProcessEnv,
  ): Promise<{ stdout: string; stderr: string; code: number }>;
  remove(): void;
}

/**
 * Builds the package (`tools/build-lib.mjs`) into a new app folder, as npm installs it for an app
 * that uses none of its optional peers: beside it only its dependencies and its required peer
 * dependencies (links to this repository's copies), as the built package.json lists them, and
 * the app's own `devDependencies`. The files of `fixtures` (a folder of `test/fixtures`) are
 * copied into the app.
 */
export async function installCompiledPackage(
  fixtures?: string,
  devDependencies: readonly string[] = [],
): Promise<CompiledApp> {
  const dir = mkdtempSync(join(tmpdir(), 'nestjs-pg-jobs-app-'));
  const packageDir = join(dir, 'node_modules', 'nestjs-pg-jobs');
  // Built inside the repository, whose node_modules the build's declaration check resolves
  // against, into a folder of this call's own (test files build at the same time), then moved.
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  const build = mkdtempSync(join(ROOT, 'dist', 'test-build-'));
  try {
    await run(process.execPath, ['tools/build-lib.mjs', '--out', build], {
      cwd: ROOT,
      timeout: 120_000,
    });
    cpSync(build, packageDir, { recursive: true });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  } finally {
    rmSync(build, { recursive: true, force: true });
  }
  const manifest = JSON.parse(
    readFileSync(join(packageDir, 'package.json'), 'utf8'),
  ) as CompiledApp['manifest'];
  const optional = (name: string) => manifest.peerDependenciesMeta?.[name]?.optional === true;
  const installed = [
    ...Object.keys(manifest.dependencies ?? {}),
    ...Object.keys(manifest.peerDependencies ?? {}).filter((name) => !optional(name)),
    ...devDependencies,
  ];
  for (const name of installed) {
    const link = join(dir, 'node_modules', name);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules', name), link, 'dir');
  }
  if (fixtures) cpSync(join(ROOT, 'test/fixtures', fixtures), dir, { recursive: true });
  return {
    dir,
    packageDir,
    manifest,
    node: (file, args = [], env = {}) =>
      runNode([file, ...args], { cwd: dir, env: { ...process.env, NODE_OPTIONS: '', ...env } }),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Runs `node ...args` to its exit. One still running after `CHILD_TIMEOUT_MS` is asked for Node's
 * diagnostic report (`--report-on-signal`), then killed: it fails with what it printed and what
 * kept it alive (its JavaScript stack, its live handles, its worker threads), not with Jest's
 * timeout, which shows nothing of it.
 */
function runNode(
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ stdout: string; stderr: string; code: number }> {
  const reports = mkdtempSync(join(tmpdir(), 'nestjs-pg-jobs-report-'));
  const child = spawn(
    process.execPath,
    ['--report-on-signal', '--report-signal=SIGUSR2', `--report-directory=${reports}`, ...args],
    options,
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let hung = false;
  let kill: NodeJS.Timeout | undefined;
  const timeout = setTimeout(() => {
    hung = true;
    child.kill('SIGUSR2');
    kill = setTimeout(() => child.kill('SIGKILL'), REPORT_WAIT_MS);
  }, CHILD_TIMEOUT_MS);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timeout);
      clearTimeout(kill);
      if (hung) {
        stderr += `\n(killed: still running after ${CHILD_TIMEOUT_MS / 1000} s)\n${describeReports(reports)}`;
      }
      rmSync(reports, { recursive: true, force: true });
      resolve({ stdout, stderr, code: hung ? -1 : (code ?? -1) });
    });
  });
}

interface DiagnosticReport {
  javascriptStack?: { message?: string; stack?: string[] };
  libuv?: {
    type: string;
    is_active?: boolean;
    is_referenced?: boolean;
    [detail: string]: unknown;
  }[];
  workers?: DiagnosticReport[];
}

/** What the reports in `folder` say kept the process alive, in a few lines. */
function describeReports(folder: string): string {
  const files = readdirSync(folder).filter((name) => name.endsWith('.json'));
  if (files.length === 0) return '(no diagnostic report: the process did not answer SIGUSR2)';
  return files
    .map((name) => describeReport(JSON.parse(readFileSync(join(folder, name), 'utf8'))))
    .join('\n');
}

function describeReport(report: DiagnosticReport, thread = 'main thread'): string {
  const handles = (report.libuv ?? [])
    .filter((handle) => handle.is_active && handle.is_referenced)
    .map(
      ({ type, is_active: _a, is_referenced: _r, address: _address, ...details }) =>
        `  ${type} ${JSON.stringify(details)}`,
    );
  return [
    `${thread}: ${report.javascriptStack?.message ?? ''}`,
    ...(report.javascriptStack?.stack ?? []).slice(0, 8).map((line) => `  ${line.trim()}`),
    `${thread}'s live handles:`,
    ...handles,
    ...(report.workers ?? []).map((worker, i) => describeReport(worker, `worker thread ${i + 1}`)),
  ].join('\n');
}
