/**
 * `npm run bench:costs`: what each job costs the database, counted rather than timed, for the
 * library and the two plain-pg queues (baseline and floor) in the workloads of `npm run bench` that
 * the hot path is judged by: the no-op drain at concurrency 50 (one instance) and the enqueue, one
 * by one and in batches of `BATCH_SIZE`. Per job:
 * - statements: calls of `pg.Client.prototype.query` in this process (the library runs its `pg`
 *   in-process), each a round trip to the server; the clients the bench watches a run with are not
 *   counted;
 * - rows written: inserted, updated and deleted, from `pg_stat_user_tables` of the workload's own
 *   database, read once every session that wrote has flushed its counts (an open one is made to
 *   with `pg_stat_force_next_flush()`, a closed one has at its exit);
 * - WAL bytes: the difference of `pg_current_wal_lsn()`, which is server-wide: the figure holds
 *   while the bench is the only writer of its server (autovacuum and checkpoints add to it).
 * Each workload runs twice on fresh databases, with `JOBS` jobs and with none; the difference over
 * `JOBS` is the cost per job, without what a run costs whatever its size (booting and stopping the
 * library's apps, migrations, the plain queues' schema, a last empty claim). The counts barely move
 * between runs (a drain's batches depend a little on timing): one run is enough.
 */
import 'reflect-metadata';
import pg from 'pg';
import { baseline, floor } from './baseline.js';
import { openBenchServer, writeResults } from './harness.js';
import { library } from './library.js';
import { BATCH_SIZE, JOBS, watchingClients } from './workloads.js';
import type { QueueUnderTest } from './workloads.js';

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

interface Counts {
  statements: number;
  inserted: number;
  updated: number;
  /** Of the updated, those that wrote no index entry (heap-only tuples). */
  hotUpdated: number;
  deleted: number;
  walBytes: number;
  /**
   * Where they go: rows by table (`rows <table> inserted|updated|HOT|deleted`) and, where the
   * server has pg_walinspect, WAL bytes by resource manager (`WAL <manager>`, and
   * `WAL full-page images` across them).
   */
  detail: Record<string, number>;
}

/** The counts so far on `url`'s database: statements of this process, rows written, WAL position. */
async function countsOn(url: string): Promise<Counts & { lsn: string }> {
  const counted = statements;
  // Every session that wrote must have flushed its counts: an open one flushes on its next idle
  // after `pg_stat_force_next_flush()` (before it answers), an ended one at its exit, after which
  // it leaves pg_stat_activity.
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
  const client = new pg.Client({ connectionString: url });
  countingClients.add(client);
  await client.connect();
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const { rows } = await client.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND backend_type = 'client backend'
           AND pid <> pg_backend_pid() AND NOT (pid = ANY($1::int[]))`,
        [open],
      );
      if (rows[0].n === 0) break;
      if (Date.now() > deadline) throw new Error('bench:costs: sessions still open after 30 s');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await client.query('SELECT pg_stat_clear_snapshot()');
    const detail: Record<string, number> = {};
    const tables = await client.query(
      `SELECT schemaname || '.' || relname AS name, n_tup_ins::int AS inserted,
              n_tup_upd::int AS updated, n_tup_hot_upd::int AS hot, n_tup_del::int AS deleted
       FROM pg_stat_user_tables`,
    );
    for (const table of tables.rows) {
      for (const key of ['inserted', 'updated', 'hot', 'deleted']) {
        if (table[key] > 0)
          detail[`rows ${table.name} ${key === 'hot' ? 'HOT' : key}`] = table[key];
      }
    }
    const { rows } = await client.query(
      `SELECT coalesce(sum(n_tup_ins), 0)::bigint AS inserted,
              coalesce(sum(n_tup_upd), 0)::bigint AS updated,
              coalesce(sum(n_tup_hot_upd), 0)::bigint AS hot_updated,
              coalesce(sum(n_tup_del), 0)::bigint AS deleted,
              pg_current_wal_lsn()::text AS lsn
       FROM pg_stat_user_tables`,
    );
    return {
      statements: counted,
      inserted: Number(rows[0].inserted),
      updated: Number(rows[0].updated),
      hotUpdated: Number(rows[0].hot_updated),
      deleted: Number(rows[0].deleted),
      walBytes: 0,
      detail,
      lsn: rows[0].lsn,
    };
  } finally {
    await client.end();
  }
}

/**
 * The WAL between two positions by resource manager, read with pg_walinspect (a contrib extension,
 * made here on the workload's database after the second position), or nothing where the server
 * lacks it. Its reader stops at the flushed position, so that is waited for first.
 */
async function walByManager(
  client: pg.Client,
  from: string,
  to: string,
): Promise<Record<string, number>> {
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
  } catch {
    return {};
  }
  const deadline = Date.now() + 10_000;
  while (
    (await client.query(`SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS flushed`, [to])).rows[0]
      .flushed !== true
  ) {
    if (Date.now() > deadline) return {};
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // It refuses an empty range (a run that wrote nothing).
  const range = `SELECT $1::pg_lsn < $2::pg_lsn AS nonempty`;
  if ((await client.query(range, [from, to])).rows[0].nonempty !== true) return {};
  const { rows } = await client.query(
    `SELECT "resource_manager/record_type" AS manager, combined_size::bigint AS bytes,
            fpi_size::bigint AS images
     FROM pg_get_wal_stats($1, $2) WHERE count > 0`,
    [from, to],
  );
  const wal: Record<string, number> = { 'WAL full-page images': 0 };
  for (const row of rows) {
    wal[`WAL ${row.manager}`] = Number(row.bytes);
    wal['WAL full-page images'] += Number(row.images);
  }
  return wal;
}

/** `after` − `before`, the WAL as the server computes it. */
async function difference(
  url: string,
  before: Counts & { lsn: string },
  after: Counts & { lsn: string },
): Promise<Counts> {
  const client = new pg.Client({ connectionString: url });
  countingClients.add(client);
  await client.connect();
  try {
    const { rows } = await client.query(`SELECT pg_wal_lsn_diff($1, $2)::bigint AS bytes`, [
      after.lsn,
      before.lsn,
    ]);
    const detail = await walByManager(client, before.lsn, after.lsn);
    for (const key of new Set([...Object.keys(before.detail), ...Object.keys(after.detail)])) {
      detail[key] = (after.detail[key] ?? 0) - (before.detail[key] ?? 0);
    }
    return {
      statements: after.statements - before.statements,
      inserted: after.inserted - before.inserted,
      updated: after.updated - before.updated,
      hotUpdated: after.hotUpdated - before.hotUpdated,
      deleted: after.deleted - before.deleted,
      walBytes: Number(rows[0].bytes),
      detail,
    };
  } finally {
    await client.end();
  }
}

/**
 * A workload, given the database's url, how many jobs and `start` to await where counting begins
 * (after its setup; the workload awaits it once, or it is awaited before the workload starts).
 */
type Workload = (url: string, jobs: number, start: () => Promise<void>) => Promise<unknown>;

const WORKLOADS: readonly (readonly [string, (side: QueueUnderTest) => Workload])[] = [
  [
    `drain c=50 x1, ${JOBS} queued`,
    (side) => (url, jobs, start) => side.drain(url, 50, 1, jobs, start),
  ],
  [
    'enqueue one by one',
    (side) => async (url, jobs, start) => {
      await start();
      return side.enqueueOneByOne(url, jobs);
    },
  ],
  [
    `enqueue in batches of ${BATCH_SIZE}`,
    (side) => async (url, jobs, start) => {
      await start();
      return side.enqueueBatches(url, jobs);
    },
  ],
];

const SIDES: readonly (readonly [string, QueueUnderTest])[] = [
  ['nestjs-pg-jobs', library],
  ['baseline', baseline],
  ['floor', floor],
];

const server = await openBenchServer();

/** The counts of one run of `workload` with `jobs` jobs, on a fresh database. */
function countRun(workload: Workload, jobs: number): Promise<Counts> {
  return server.onFreshDatabase(async (url) => {
    let before: (Counts & { lsn: string }) | undefined;
    await workload(url, jobs, async () => {
      before = await countsOn(url);
    });
    if (!before) throw new Error('bench:costs: a workload never started counting');
    return difference(url, before, await countsOn(url));
  });
}

type Measure = Exclude<keyof Counts, 'detail'>;
const MEASURES: readonly (readonly [Measure, string])[] = [
  ['statements', 'statements (round trips)'],
  ['inserted', 'rows inserted'],
  ['updated', 'rows updated'],
  ['hotUpdated', '… of which HOT (no index entry)'],
  ['deleted', 'rows deleted'],
  ['walBytes', 'WAL bytes'],
];

const perJob: Record<string, Record<string, Counts>> = {};
for (const [name, make] of WORKLOADS) {
  perJob[name] = {};
  for (const [sideName, side] of SIDES) {
    const full = await countRun(make(side), JOBS);
    const empty = await countRun(make(side), 0);
    const detail: Record<string, number> = {};
    for (const key of new Set([...Object.keys(full.detail), ...Object.keys(empty.detail)])) {
      const value = ((full.detail[key] ?? 0) - (empty.detail[key] ?? 0)) / JOBS;
      if (value !== 0 || key === 'WAL full-page images') detail[key] = value;
    }
    perJob[name][sideName] = {
      ...(Object.fromEntries(
        MEASURES.map(([key]) => [key, (full[key] - empty[key]) / JOBS]),
      ) as Omit<Counts, 'detail'>),
      detail,
    };
    console.error(`${name}: ${sideName} counted`);
  }
}
await server.stop();

const format = (key: string, n: number) =>
  key.startsWith('WAL') || key === 'walBytes' ? Math.round(n).toString() : n.toFixed(3);
const lines = [
  `| workload | per job | ${SIDES.map(([name]) => name).join(' | ')} |`,
  `| --- | --- | ${SIDES.map(() => '---:').join(' | ')} |`,
  ...WORKLOADS.flatMap(([name]) =>
    MEASURES.map(
      ([key, label]) =>
        `| ${name} | ${label} | ${SIDES.map(([side]) => format(key, perJob[name][side][key])).join(' | ')} |`,
    ),
  ),
];
console.log(
  `\nPer job: a run of ${JOBS} jobs less a run of none, over ${JOBS}; PostgreSQL from ${server.source}; WAL is the server's, read while the bench is its only writer.\n`,
);
console.log(lines.join('\n'));
console.log(
  '\nWhere they go, per job (rows by table; WAL bytes by resource manager, if pg_walinspect):',
);
for (const [name] of WORKLOADS) {
  for (const [side] of SIDES) {
    const detail = perJob[name][side].detail;
    // What rounds to nothing is left out, but full-page images: none is a figure too.
    const keys = Object.keys(detail)
      .filter((key) => key === 'WAL full-page images' || Number(format(key, detail[key])) !== 0)
      .sort();
    console.log(
      `- ${name}, ${side}: ${keys.map((key) => `${key} ${format(key, detail[key])}`).join('; ')}`,
    );
  }
}

const file = writeResults('costs', { jobs: JOBS, batchSize: BATCH_SIZE, perJob });
console.log(`\nWritten to ${file}`);
