/**
 * What a stretch of a run costs the database, counted rather than timed: the one measurement that
 * `npm run bench:costs`, `bench:peers` and `bench:attempts` share. Between two points of a run, on
 * the run's own database:
 * - statements: calls of `pg.Client.prototype.query` in this process, each a round trip to the
 *   server (every queue the benches run, the library and its peers, uses this process's `pg`); the
 *   clients a bench watches a run with (`watchingClients`) and this module's own are not counted;
 * - rows written by table: inserted, updated (and of those HOT: no index entry written), deleted,
 *   and the change in dead rows, from `pg_stat_user_tables`, read once every session that wrote has
 *   flushed its counts (an open one is made to with `pg_stat_force_next_flush()`, a closed one has
 *   at its exit and is waited out of `pg_stat_activity`);
 * - WAL bytes: where the server has the contrib extension pg_walinspect, the records of this
 *   database's blocks and the commits of their transactions, by resource manager, with their
 *   full-page images, so that other databases' writes on a shared server do not count; and always
 *   the server-wide distance between the two insert positions (`walScope` says which `walBytes`
 *   is). A temporary replication slot (`keepingWal`) keeps the stretch's WAL until it is read.
 */
import pg from 'pg';
import { watchingClients } from './workloads.js';

type Query = (this: pg.Client, ...args: unknown[]) => unknown;
const prototype = pg.Client.prototype as unknown as { query: Query };
const query = prototype.query;

/** A client with its server process's id (pg sets it at connection; its types leave it out). */
type Session = pg.Client & { processID?: number | null };

/** Clients that have sent a statement and not ended, whose sessions may hold unflushed counts. */
const openClients = new Set<Session>();
/** Clients of this module's own, to read the counts: never counted. */
const countingClients = new WeakSet<pg.Client>();
let statements = 0;

prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
  if (!watchingClients.has(this) && !countingClients.has(this)) {
    statements++;
    if (!openClients.has(this)) {
      openClients.add(this);
      this.once('end', () => openClients.delete(this));
    }
  }
  return query.apply(this, args);
};

/** Runs `fn` on a client of this module's own (its statements are not counted), on `url`. */
async function withCountingClient<T>(url: string, fn: (client: pg.Client) => Promise<T>) {
  const client = new pg.Client({ connectionString: url });
  countingClients.add(client);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Rows written to one table, as `pg_stat_user_tables` counts them. */
export interface TableRows {
  inserted: number;
  updated: number;
  /** Of the updated, those that wrote no index entry (heap-only tuples). */
  hot: number;
  deleted: number;
  dead: number;
}
const ROW_KEYS = ['inserted', 'updated', 'hot', 'deleted', 'dead'] as const;

/** A point of a run: statements so far, rows written by table, the WAL insert position. */
export interface CostPoint {
  statements: number;
  tables: Record<string, TableRows>;
  lsn: string;
}

/** What was written between two points. */
export interface Costs {
  statements: number;
  inserted: number;
  updated: number;
  hotUpdated: number;
  deleted: number;
  /** WAL bytes: this database's (`walScope` 'database') or the server's ('server'). */
  walBytes: number;
  walScope: 'database' | 'server';
  /** The server-wide distance between the two positions: every database's writes. */
  walServerWide: number;
  /** Of `walBytes`, full-page images (0 where it is the server's: not read). */
  walImages: number;
  /** Rows by table and kind of write, by `schema.table`. */
  tables: Record<string, TableRows>;
  /** WAL bytes of this database by resource manager (Heap, Heap2, Btree, Transaction, ...). */
  walByManager: Record<string, number>;
}

/** The point of `url`'s run now, once every session of it that wrote has flushed its counts. */
export async function costPoint(url: string): Promise<CostPoint> {
  const counted = statements;
  // An open session flushes on its next idle after `pg_stat_force_next_flush()` (before it
  // answers), an ended one at its exit, after which it leaves pg_stat_activity.
  const open: number[] = [];
  for (const session of openClients) {
    if (session.processID == null) continue;
    try {
      await query.call(session, 'SELECT pg_stat_force_next_flush()');
      open.push(session.processID);
    } catch {
      // Ending: its session flushes at its exit, and is waited for below like any other.
    }
  }
  return withCountingClient(url, async (client) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const { rows } = await client.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND backend_type = 'client backend'
           AND pid <> pg_backend_pid() AND NOT (pid = ANY($1::int[]))`,
        [open],
      );
      if (rows[0].n === 0) break;
      if (Date.now() > deadline) throw new Error('bench: sessions still open after 30 s');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query(
      `SELECT schemaname || '.' || relname AS name, n_tup_ins::bigint AS inserted,
              n_tup_upd::bigint AS updated, n_tup_hot_upd::bigint AS hot,
              n_tup_del::bigint AS deleted, n_dead_tup::bigint AS dead
       FROM pg_stat_user_tables`,
    );
    const tables: Record<string, TableRows> = {};
    for (const row of rows) {
      tables[row.name] = Object.fromEntries(
        ROW_KEYS.map((key) => [key, Number(row[key])]),
      ) as unknown as TableRows;
    }
    const lsn = (await client.query('SELECT pg_current_wal_insert_lsn()::text AS lsn')).rows[0].lsn;
    return { statements: counted, tables, lsn };
  });
}

/**
 * Runs `fn` while a temporary physical replication slot keeps the server from removing WAL made
 * from now on: a checkpoint (anyone's, on a shared server) may fall in a measured stretch, and
 * pg_walinspect can only read segments still there. With `checkpoint`, one is taken first, so that
 * the first write of every page in the stretch pays its full-page image as in production. The
 * slot's session is on the server's `postgres` database: `costPoint` waits for every session of
 * the run's own database to flush, and this one must not be among them.
 */
export async function keepingWal<T>(
  url: string,
  { checkpoint }: { checkpoint: boolean },
  fn: () => Promise<T>,
): Promise<T> {
  const elsewhere = new URL(url);
  elsewhere.pathname = '/postgres';
  const keeper = new pg.Client({ connectionString: elsewhere.toString() });
  countingClients.add(keeper);
  await keeper.connect();
  try {
    await keeper.query('SELECT pg_create_physical_replication_slot($1, true, true)', [
      `bench_costs_${process.pid}`,
    ]);
    if (checkpoint) await keeper.query('CHECKPOINT');
    return await fn();
  } finally {
    await keeper.end();
  }
}

/** This database's WAL between `from` and `to` by resource manager, or null without pg_walinspect. */
async function walOfDatabase(
  client: pg.Client,
  from: string,
  to: string,
): Promise<{ bytes: number; images: number; byManager: Record<string, number> } | null> {
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
  } catch {
    return null;
  }
  // Its reader stops at the flushed position, and refuses an empty range (a run that wrote nothing).
  const deadline = Date.now() + 10_000;
  const flushed = 'SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS flushed';
  while ((await client.query(flushed, [to])).rows[0].flushed !== true) {
    if (Date.now() > deadline) throw new Error('bench: WAL not flushed after 10 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const empty = { bytes: 0, images: 0, byManager: {} };
  const nonempty = `SELECT $1::pg_lsn < $2::pg_lsn AS nonempty`;
  if ((await client.query(nonempty, [from, to])).rows[0].nonempty !== true) return empty;
  // A record is this database's when a block it changes is (`block_ref` names blocks as
  // tablespace/database/relation); a commit, which changes no block, when its transaction wrote one.
  const { rows } = await client.query(
    `WITH r AS (
       SELECT * FROM pg_get_wal_records_info($1, $2)
     ), db AS (
       SELECT '%/' || oid || '/%' AS blocks FROM pg_database WHERE datname = current_database()
     ), mine AS (
       SELECT DISTINCT xid::text AS xid FROM r, db
       WHERE block_ref LIKE db.blocks AND xid::text <> '0'
     )
     SELECT resource_manager AS manager, sum(record_length)::bigint AS bytes,
            sum(fpi_length)::bigint AS images
     FROM r, db
     WHERE block_ref LIKE db.blocks OR xid::text IN (SELECT xid FROM mine)
     GROUP BY 1`,
    [from, to],
  );
  return {
    bytes: rows.reduce((sum, row) => sum + Number(row.bytes), 0),
    images: rows.reduce((sum, row) => sum + Number(row.images), 0),
    byManager: Object.fromEntries(rows.map((row) => [row.manager, Number(row.bytes)])),
  };
}

/** What `url`'s run wrote from `before` to `after`. Call within `keepingWal`. */
export function costsBetween(url: string, before: CostPoint, after: CostPoint): Promise<Costs> {
  return withCountingClient(url, async (client) => {
    const { rows } = await client.query(`SELECT pg_wal_lsn_diff($1, $2)::bigint AS bytes`, [
      after.lsn,
      before.lsn,
    ]);
    const serverWide = Number(rows[0].bytes);
    const own = await walOfDatabase(client, before.lsn, after.lsn);
    const tables: Record<string, TableRows> = {};
    for (const [name, a] of Object.entries(after.tables)) {
      const b = before.tables[name];
      tables[name] = Object.fromEntries(
        ROW_KEYS.map((key) => [key, a[key] - (b?.[key] ?? 0)]),
      ) as unknown as TableRows;
    }
    const sum = (key: keyof TableRows) =>
      Object.values(tables).reduce((total, table) => total + table[key], 0);
    return {
      statements: after.statements - before.statements,
      inserted: sum('inserted'),
      updated: sum('updated'),
      hotUpdated: sum('hot'),
      deleted: sum('deleted'),
      walBytes: own?.bytes ?? serverWide,
      walScope: own ? 'database' : 'server',
      walServerWide: serverWide,
      walImages: own?.images ?? 0,
      tables,
      walByManager: own?.byManager ?? {},
    };
  });
}
