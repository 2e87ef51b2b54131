import { execFile, execFileSync } from 'node:child_process';
import {
  accessSync,
  appendFileSync,
  chownSync,
  constants,
  mkdtempSync,
  readdirSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../tools/dev-database.js';
import { waitFor } from './jobs-app.js';

const run = promisify(execFile);

/** Where Debian's postgresql-NN packages put the server's binaries. */
const DEBIAN_ROOT = '/usr/lib/postgresql';
const BINARIES = ['initdb', 'pg_ctl', 'pg_basebackup', 'postgres'];
const STANDBY_NAME = 'standby';
const COMMAND_TIMEOUT_MS = 60_000;

/** One server of the pair: its libpq address. */
export interface ServerAddress {
  readonly host: string;
  readonly port: number;
  /** The connection string of `database` on this server, as user `postgres`. */
  url(database?: string): string;
}

/** A primary with a synchronous streaming standby, both of this test file, on free ports. */
export interface FailoverCluster {
  readonly primary: ServerAddress;
  readonly standby: ServerAddress;
  /** Stops the primary the way a crash does (`pg_ctl stop -m immediate`: no checkpoint). */
  crashPrimary(): Promise<void>;
  /** Promotes the standby (`pg_ctl promote`), resolving once it accepts writes. */
  promoteStandby(): Promise<void>;
  /** Stops both servers and removes their files. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts a PostgreSQL primary and a streaming standby from this machine's server binaries (the
 * newest major under /usr/lib/postgresql), each a real server in a temporary folder. The standby is
 * the primary's one synchronous standby (`synchronous_standby_names`, `synchronous_commit = on`):
 * a commit is acknowledged only once the standby has its WAL, as on RDS Multi-AZ or a Patroni
 * cluster with synchronous mode, so a promoted standby has every transaction a client saw commit.
 *
 * As root (as tests run in CI) the servers run as the `postgres` user, who owns the folder.
 */
export async function startFailoverCluster(): Promise<FailoverCluster> {
  const bin = findServerBinaries();
  if (!bin)
    throw new Error(
      `No PostgreSQL server binaries (${BINARIES.join(', ')}) under ${DEBIAN_ROOT}/*/bin.`,
    );
  const owner = serverUser();
  if (process.getuid?.() === 0 && !owner) {
    throw new Error(
      'Running as root with no `postgres` user (or no runuser): initdb refuses root.',
    );
  }
  const dir = mkdtempSync(join(tmpdir(), 'pg-failover-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const asServerUser = (binary: string, args: string[]) =>
    run(
      owner ? 'runuser' : join(bin, binary),
      owner ? ['-u', 'postgres', '--', join(bin, binary), ...args] : args,
      {
        timeout: COMMAND_TIMEOUT_MS,
      },
    ).catch((err: { stderr?: string; message: string }) => {
      throw new Error(`${binary} ${args.join(' ')} failed: ${err.stderr?.trim() || err.message}`, {
        cause: err,
      });
    });
  const primaryData = join(dir, 'primary');
  const standbyData = join(dir, 'standby');
  const primary = address(await freePort());
  const standby = address(await freePort());
  const pgCtl = (data: string, ...args: string[]) =>
    asServerUser('pg_ctl', ['-D', data, '-w', '-t', '60', ...args]);

  let stopping: Promise<void> | undefined;
  const cluster: FailoverCluster = {
    primary,
    standby,
    crashPrimary: async () => {
      await pgCtl(primaryData, '-m', 'immediate', 'stop');
    },
    promoteStandby: async () => {
      await pgCtl(standbyData, 'promote');
    },
    stop: () =>
      (stopping ??= Promise.all(
        [primaryData, standbyData].map((data) =>
          pgCtl(data, '-m', 'immediate', 'stop').catch(() => undefined),
        ),
      ).then(() => rmSync(dir, { recursive: true, force: true }))),
  };
  try {
    await asServerUser('initdb', [
      '-D',
      primaryData,
      '-U',
      'postgres',
      '--auth=trust',
      '-E',
      'UTF8',
      '--no-sync',
    ]);
    appendFileSync(
      join(primaryData, 'postgresql.conf'),
      [
        '',
        ...serverSettings(primary.port, dir),
        `synchronous_standby_names = '${STANDBY_NAME}'`,
        'synchronous_commit = on',
        '',
      ].join('\n'),
    );
    await pgCtl(primaryData, '-l', join(dir, 'primary.log'), 'start');
    // -R writes standby.signal; the settings after it are the standby's own.
    await asServerUser('pg_basebackup', [
      '-h',
      primary.host,
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      standbyData,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
    ]);
    appendFileSync(
      join(standbyData, 'postgresql.auto.conf'),
      [
        '',
        ...serverSettings(standby.port, dir),
        `primary_conninfo = 'host=${primary.host} port=${primary.port} user=postgres application_name=${STANDBY_NAME}'`,
        // Once promoted it has no standby of its own: waiting for one would hang every commit.
        "synchronous_standby_names = ''",
        '',
      ].join('\n'),
    );
    await pgCtl(standbyData, '-l', join(dir, 'standby.log'), 'start');
    await waitFor(
      'the standby to stream synchronously from the primary',
      async () => {
        const rows = await queryOnce<{ sync_state: string }>(
          primary.url(),
          `SELECT sync_state FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'`,
          [STANDBY_NAME],
        );
        return rows[0]?.sync_state === 'sync';
      },
      30_000,
      50,
    );
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

/**
 * Why a primary and standby cannot be started on this machine, or `undefined` when they can
 * (`describeWhereAvailable`).
 */
export function failoverClusterUnavailable(): string | undefined {
  if (!findServerBinaries()) {
    return `no PostgreSQL server binaries (${BINARIES.join(', ')}) under ${DEBIAN_ROOT}/*/bin`;
  }
  if (process.getuid?.() === 0 && !serverUser()) {
    return 'this process is root, and there is no `postgres` user (or no runuser) to run the servers as';
  }
  return undefined;
}

/** The settings both servers share: local TCP only, sockets in the test's folder, small. */
function serverSettings(port: number, dir: string): string[] {
  return [
    "listen_addresses = '127.0.0.1'",
    `port = ${port}`,
    `unix_socket_directories = '${dir}'`,
    'max_connections = 50',
    'shared_buffers = 16MB',
    // Only a crash of the machine needs fsync; a crash of the server process keeps what it wrote.
    'fsync = off',
  ];
}

function address(port: number): ServerAddress {
  return {
    host: '127.0.0.1',
    port,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
  };
}

function findServerBinaries(): string | undefined {
  let majors: string[];
  try {
    majors = readdirSync(DEBIAN_ROOT);
  } catch {
    return undefined;
  }
  return majors
    .filter((major) => /^\d+$/.test(major))
    .sort((a, b) => Number(b) - Number(a))
    .map((major) => join(DEBIAN_ROOT, major, 'bin'))
    .find((bin) => BINARIES.every((binary) => executable(join(bin, binary))));
}

/** The `postgres` user to run the servers as when this process is root (initdb refuses root). */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const id = (flag: string) =>
      Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
    execFileSync('runuser', ['--help'], { stdio: 'ignore' });
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    return undefined;
  }
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function queryOnce<Row>(url: string, text: string, values: unknown[]): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.query(text, values)).rows as Row[];
  } finally {
    await client.end().catch(() => undefined);
  }
}
