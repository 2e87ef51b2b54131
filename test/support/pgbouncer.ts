import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { accessSync, chmodSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import pg from 'pg';
import { freePort } from '../../tools/dev-database.js';

/** Where Debian's `pgbouncer` package puts the binary; `PATH` is searched too. */
const DEBIAN_BINARY = '/usr/sbin/pgbouncer';
const START_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

/** A PgBouncer of this test file, in front of the test server. */
export interface PgBouncer {
  /** `url` (a database of the test server) reached through the pooler instead. */
  rewrite(url: string): string;
  /** Runs a command of PgBouncer's admin console (`SHOW POOLS`, `SHOW CONFIG`, ...). */
  admin<Row = Record<string, unknown>>(command: string): Promise<Row[]>;
  /** Stops it (SIGTERM: immediate shutdown) and removes its files. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts a real PgBouncer on a free port of 127.0.0.1, as a child process (never a daemon), in
 * front of the server of `serverUrl`: any database name is passed through to that server, logging
 * in as `serverUrl`'s user whatever the client says (`auth_type = any`: a test-only setting).
 *
 * The binary is found on `PATH` or at `/usr/sbin/pgbouncer`; when absent it is installed with
 * `apt-get` if this process may (root, with apt). Otherwise this throws, saying how to install it:
 * a suite that needs a pooler must not pass without one.
 */
export async function startPgBouncer(
  serverUrl: string,
  settings: { poolMode?: 'session' | 'transaction'; poolSize?: number } = {},
): Promise<PgBouncer> {
  const binary = findPgBouncer() ?? installPgBouncer();
  const server = new URL(serverUrl);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-'));
  // PgBouncer refuses to run as root: it is started as `postgres`, who must read its config.
  chmodSync(dir, 0o755);
  const config = join(dir, 'pgbouncer.ini');
  const serverLogin = [
    `host=${server.hostname}`,
    `port=${server.port || 5432}`,
    `user=${decodeURIComponent(server.username || 'postgres')}`,
    ...(server.password ? [`password=${decodeURIComponent(server.password)}`] : []),
  ].join(' ');
  writeFileSync(
    config,
    [
      '[databases]',
      `* = ${serverLogin}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = any',
      `admin_users = ${decodeURIComponent(server.username || 'postgres')}`,
      `pool_mode = ${settings.poolMode ?? 'transaction'}`,
      `default_pool_size = ${settings.poolSize ?? 10}`,
      'max_client_conn = 500',
      // TypeORM and pg may send these at connection; PgBouncer refuses unknown ones otherwise.
      'ignore_startup_parameters = extra_float_digits, options',
      'logfile =',
      'pidfile =',
      '',
    ].join('\n'),
  );
  chmodSync(config, 0o644);
  const runAsRoot = process.getuid?.() === 0;
  const child = spawn(binary, [...(runAsRoot ? ['-u', 'postgres'] : []), config], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => (output = (output + chunk).slice(-8_000)));
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const rewrite = (url: string) => {
    const through = new URL(url);
    through.hostname = '127.0.0.1';
    through.port = String(port);
    return through.toString();
  };
  const adminUrl = rewrite(new URL('/pgbouncer', serverUrl).toString());
  let stopping: Promise<void> | undefined;
  const bouncer: PgBouncer = {
    rewrite,
    admin: async <Row>(command: string) => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        // Without parameters pg speaks the simple query protocol: the only one the console knows.
        return (await client.query(command)).rows as Row[];
      } finally {
        await client.end();
      }
    },
    stop: () =>
      (stopping ??= stopProcess(child, exited).finally(() =>
        rmSync(dir, { recursive: true, force: true }),
      )),
  };
  try {
    await waitUntilAccepting(rewrite(serverUrl), child, () => output);
  } catch (err) {
    await bouncer.stop();
    throw err;
  }
  return bouncer;
}

function findPgBouncer(): string | undefined {
  const candidates = [
    ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'pgbouncer')),
    DEBIAN_BINARY,
  ];
  return candidates.find((file) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Why PgBouncer cannot be had on this machine (no binary, and no root with apt-get to install it),
 * or `undefined` when it can (`describeWhereAvailable`).
 */
export function pgBouncerUnavailable(): string | undefined {
  if (findPgBouncer()) return undefined;
  if (process.getuid?.() !== 0) return 'pgbouncer is not installed, and this process is not root';
  try {
    execFileSync('apt-get', ['--version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'pgbouncer is not installed, and there is no apt-get to install it';
  }
}

/** `apt-get install pgbouncer`, refreshing the package lists once if the first try fails. */
function installPgBouncer(): string {
  const cannot = (why: string) =>
    new Error(
      `PgBouncer is not installed and this process cannot install it (${why}). ` +
        'Install the Debian package: `apt-get install -y pgbouncer` (as root; `.ci/run` does it), ' +
        'or put a pgbouncer binary on PATH. The PgBouncer suite never passes without a real one.',
    );
  if (process.getuid?.() !== 0) throw cannot('not root');
  const apt = (...args: string[]) =>
    execFileSync('apt-get', args, {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      stdio: 'pipe',
      timeout: 300_000,
    });
  const install = () => apt('install', '-y', '--no-install-recommends', 'pgbouncer');
  try {
    try {
      install();
    } catch {
      apt('update');
      install();
    }
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim().split('\n').pop();
    throw cannot(`apt-get failed: ${stderr || (err as Error).message}`);
  }
  const binary = findPgBouncer();
  if (!binary) throw cannot(`apt-get installed no binary at ${DEBIAN_BINARY}`);
  return binary;
}

async function waitUntilAccepting(
  url: string,
  child: ChildProcess,
  output: () => string,
): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `PgBouncer exited at start (${child.exitCode ?? child.signalCode}):\n${output()}`,
      );
    }
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (err) {
      if (Date.now() > deadline) {
        throw new Error(
          `PgBouncer did not accept connections within ${START_TIMEOUT_MS} ms (${(err as Error).message}):\n${output()}`,
          { cause: err },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

async function stopProcess(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
