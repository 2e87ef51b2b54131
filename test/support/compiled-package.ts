import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = process.cwd();
/** How long an app's process may run (below Jest's testTimeout, jest.config.mjs). */
const CHILD_TIMEOUT_MS = 60_000;

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
      run(process.execPath, [file, ...args], {
        cwd: dir,
        env: { ...process.env, NODE_OPTIONS: '', ...env },
        timeout: CHILD_TIMEOUT_MS,
      }).then(
        ({ stdout, stderr }) => ({ stdout, stderr, code: 0 }),
        (err: { stdout?: string; stderr?: string; code?: number | null; killed?: boolean }) => {
          const stdout = err.stdout ?? '';
          const stderr = err.stderr ?? '';
          // Hung: fail with what it printed, not with Jest's timeout, which shows nothing of it.
          if (err.killed) {
            return {
              stdout,
              stderr: `${stderr}\n(killed: still running after ${CHILD_TIMEOUT_MS / 1000} s)`,
              code: -1,
            };
          }
          if (typeof err.code !== 'number') throw err;
          return { stdout, stderr, code: err.code };
        },
      ),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
