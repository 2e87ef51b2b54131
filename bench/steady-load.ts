/**
 * A steady load under a held-back vacuum horizon (issue 28 item 4), for `npm run bench:horizon`
 * (the library) and `npm run bench:peers` (the library, graphile-worker and pg-boss): jobs enqueued
 * at `rate` a second and drained by one consumer at concurrency `concurrency`, on a fresh database,
 * for `seconds`; once with nothing else running and once while another session of the same
 * database holds a `REPEATABLE READ` transaction open that took a snapshot: no row deleted or
 * updated after that snapshot can be vacuumed, pruned, or hinted dead in an index until it ends.
 * Every `interval` seconds it records the jobs started, their enqueue-to-start latency (the time a
 * due job waits for its claim), the queue's dead rows and size, the entries read per scan of the
 * two indexes its scans read most (the claim's among them), and, for a side that names its claim,
 * the claim's executed plan (rolled back).
 *
 * The shared server the tests use runs with autovacuum off; when the server's autovacuum is off the
 * run does what it would do to the queue's tables, a plain `VACUUM` of each every `vacuumEvery`
 * seconds (autovacuum's default naptime), so that the run without the held horizon is the one an
 * operator would have; under the held horizon those vacuums find nothing they may remove.
 */
import pg from 'pg';
import type { BenchServer } from './harness.js';
import { latency } from './stats.js';
import type { Latency } from './stats.js';

/** A long run's job payload: when it was enqueued, on this process's `performance.now()`. */
export interface TimedPayload {
  at: number;
}

/** Enqueues `jobs` no-op jobs of `payload`, in one batch. */
export type Enqueue = (jobs: number, payload: TimedPayload) => Promise<void>;

/** What a queue must offer to be run under a steady load. */
export interface SteadyConsumer {
  /** The schema of the queue's tables, whose dead rows and size are recorded. */
  schema: string;
  /**
   * Makes the queue's schema on `url`, starts one consumer of `concurrency` whose no-op task calls
   * `started` with each job's payload as it starts, runs `load` with the queue's batch enqueue, and
   * stops the consumer.
   */
  withConsumer<T>(
    url: string,
    concurrency: number,
    started: (payload: TimedPayload) => void,
    load: (enqueue: Enqueue) => Promise<T>,
  ): Promise<T>;
  /**
   * The queue's claim, as `[text, values]`, explained with `ANALYZE` and `BUFFERS` in a transaction
   * that is rolled back: what the claim's scan visits as dead rows pile up.
   */
  claim?: readonly [string, unknown[]];
}

export interface SteadyLoadSettings {
  rate: number;
  seconds: number;
  interval: number;
  concurrency: number;
  /** Seconds between the run's own `VACUUM`s where the server's autovacuum is off; 0 for none. */
  vacuumEvery: number;
}

/** The settings of `BENCH_HORIZON_*`, the by default. */
export function steadyLoadSettings(): SteadyLoadSettings {
  return {
    rate: Number(process.env.BENCH_HORIZON_RATE ?? 2000),
    seconds: Number(process.env.BENCH_HORIZON_SECONDS ?? 600),
    interval: Number(process.env.BENCH_HORIZON_INTERVAL ?? 60),
    concurrency: Number(process.env.BENCH_HORIZON_CONCURRENCY ?? 50),
    vacuumEvery: Number(process.env.BENCH_HORIZON_VACUUM_SECONDS ?? 60),
  };
}

/** What one interval of a run came to. */
export interface IntervalFigures {
  /** Its end, since the run began. */
  seconds: number;
  enqueuedPerSecond: number;
  startedPerSecond: number;
  /** Enqueue-to-start of the jobs that started in it, ms. */
  latency: Latency;
  /** Jobs enqueued and not yet started at its end. */
  backlog: number;
  /** Dead rows in the queue's schema, as `pg_stat_user_tables` counts them at its end. */
  deadRows: number;
  /** Bytes of the queue's schema (tables, indexes, TOAST) at its end. */
  bytes: number;
  /** Bytes of each of its relations over 1 MiB (tables and indexes), at its end. */
  relations: Record<string, number>;
  /**
   * The two indexes of the schema whose scans read the most entries in it (the claim's, and for
   * the library the completion's, `job_history_active`): entries read per scan counts the dead
   * entries a scan stepped over as well as what it found, from `pg_stat_user_indexes`.
   */
  mostReadIndexes: IndexScans[];
  /** The claim explained at its end, where the side names it. */
  claim?: ClaimProbe;
}

/** Scans and entries read so far, by index of the schema. */
type IndexReads = Record<string, { scans: number; read: number }>;

export interface IndexScans {
  name: string;
  scans: number;
  entriesPerScan: number;
}

/** The two indexes whose scans read the most entries between `before` and `after`. */
function mostReadIndexes(before: IndexReads, after: IndexReads): IndexScans[] {
  return Object.entries(after)
    .map(([name, { scans, read }]) => ({
      name,
      scans: scans - (before[name]?.scans ?? 0),
      read: read - (before[name]?.read ?? 0),
    }))
    .filter((index) => index.scans > 0 && index.read > 0)
    .sort((a, b) => b.read - a.read)
    .slice(0, 2)
    .map(({ name, scans, read }) => ({ name, scans, entriesPerScan: read / scans }));
}

export interface ClaimProbe {
  ms: number;
  /** Shared buffers the claim touched (hit or read). */
  buffers: number;
}

/**
 * Holds the vacuum horizon of `url`'s database back: a `REPEATABLE READ` transaction whose first
 * statement took its snapshot, left open until `release`.
 */
async function holdHorizon(url: string): Promise<{ xmin: string; release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  await client.query('SELECT count(*) FROM pg_class');
  const { rows } = await client.query(
    'SELECT backend_xmin::text AS xmin FROM pg_stat_activity WHERE pid = pg_backend_pid()',
  );
  if (rows[0].xmin == null) throw new Error('bench: the held transaction has no snapshot');
  return {
    xmin: rows[0].xmin,
    async release() {
      await client.query('ROLLBACK');
      await client.end();
    },
  };
}

/** Whether the server's autovacuum runs. */
export async function autovacuumOn(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query('SHOW autovacuum')).rows[0].autovacuum === 'on';
  } finally {
    await client.end();
  }
}

/** The schema's dead rows, total size and relations over 1 MiB. */
async function schemaState(client: pg.Client, schema: string) {
  await client.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await client.query(
    `SELECT coalesce(sum(n_dead_tup), 0)::bigint AS dead,
            coalesce(sum(pg_total_relation_size(relid)), 0)::bigint AS bytes
     FROM pg_stat_user_tables WHERE schemaname = $1`,
    [schema],
  );
  const relations = await client.query(
    `SELECT c.relname AS name, pg_relation_size(c.oid)::bigint AS bytes
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relkind IN ('r', 'i') AND pg_relation_size(c.oid) > 1048576
     ORDER BY 2 DESC`,
    [schema],
  );
  const indexes = await client.query(
    `SELECT indexrelname AS name, idx_scan::bigint AS scans, idx_tup_read::bigint AS read
     FROM pg_stat_user_indexes WHERE schemaname = $1`,
    [schema],
  );
  return {
    deadRows: Number(rows[0].dead),
    bytes: Number(rows[0].bytes),
    relations: Object.fromEntries(relations.rows.map((r) => [r.name, Number(r.bytes)])),
    indexReads: Object.fromEntries(
      indexes.rows.map((r) => [r.name, { scans: Number(r.scans), read: Number(r.read) }]),
    ) as IndexReads,
  };
}

/** The claim run once under `EXPLAIN (ANALYZE, BUFFERS)` and rolled back. */
async function probeClaim(
  client: pg.Client,
  [text, values]: readonly [string, unknown[]],
): Promise<ClaimProbe> {
  await client.query('BEGIN');
  try {
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, values);
    const [{ Plan: plan, 'Execution Time': ms }] = rows[0]['QUERY PLAN'];
    return { ms, buffers: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'] };
  } finally {
    await client.query('ROLLBACK');
  }
}

/** The run's `VACUUM` of every table of `schema`, one at a time. */
async function vacuumSchema(client: pg.Client, schema: string): Promise<void> {
  const { rows } = await client.query(
    `SELECT format('%I.%I', schemaname, relname) AS name FROM pg_stat_user_tables
     WHERE schemaname = $1`,
    [schema],
  );
  for (const { name } of rows) await client.query(`VACUUM ${name}`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One run of the steady load with `side` on a fresh database, the horizon held or not. */
export function runSteadyLoad(
  server: BenchServer,
  side: SteadyConsumer,
  settings: SteadyLoadSettings,
  { held }: { held: boolean },
): Promise<IntervalFigures[]> {
  return server.onFreshDatabase(async (url) => {
    const vacuums = settings.vacuumEvery > 0 && !(await autovacuumOn(url));
    let started = 0;
    let latencies: number[] = [];
    const onStart = (payload: TimedPayload) => {
      started++;
      latencies.push(performance.now() - payload.at);
    };
    return side.withConsumer(url, settings.concurrency, onStart, async (enqueue) => {
      const watcher = new pg.Client({ connectionString: url });
      const vacuumer = new pg.Client({ connectionString: url });
      await watcher.connect();
      await vacuumer.connect();
      const horizon = held ? await holdHorizon(url) : undefined;
      const begin = performance.now();
      const end = begin + settings.seconds * 1000;
      let enqueued = 0;
      let running = true;
      // The producer: every 20 ms, the jobs due by then at `rate`, in batches of at most 500.
      const producer = (async () => {
        while (running && performance.now() < end) {
          const due = Math.floor(((performance.now() - begin) / 1000) * settings.rate);
          while (enqueued < due) {
            const batch = Math.min(500, due - enqueued);
            await enqueue(batch, { at: performance.now() });
            enqueued += batch;
          }
          await sleep(20);
        }
      })();
      const vacuumLoop = (async () => {
        if (!vacuums) return;
        let next = begin + settings.vacuumEvery * 1000;
        while (running) {
          if (performance.now() >= next) {
            await vacuumSchema(vacuumer, side.schema);
            next += settings.vacuumEvery * 1000;
          }
          await sleep(200);
        }
      })();
      const intervals: IntervalFigures[] = [];
      try {
        let last = { at: begin, enqueued: 0, started: 0 };
        let lastReads = (await schemaState(watcher, side.schema)).indexReads;
        for (let n = 1; n * settings.interval <= settings.seconds; n++) {
          await sleep(begin + n * settings.interval * 1000 - performance.now());
          const now = { at: performance.now(), enqueued, started };
          const window = latencies;
          latencies = [];
          const span = (now.at - last.at) / 1000;
          const { indexReads, ...state } = await schemaState(watcher, side.schema);
          intervals.push({
            seconds: (now.at - begin) / 1000,
            enqueuedPerSecond: (now.enqueued - last.enqueued) / span,
            startedPerSecond: (now.started - last.started) / span,
            latency: latency(window),
            backlog: now.enqueued - now.started,
            ...state,
            mostReadIndexes: mostReadIndexes(lastReads, indexReads),
            ...(side.claim ? { claim: await probeClaim(watcher, side.claim) } : {}),
          });
          last = now;
          lastReads = indexReads;
          console.error(
            `${held ? 'held' : 'free'} ${Math.round((now.at - begin) / 1000)} s: ${Math.round(intervals.at(-1)!.startedPerSecond)} jobs/s`,
          );
        }
        return intervals;
      } finally {
        running = false;
        await producer;
        await vacuumLoop;
        await horizon?.release();
        await watcher.end();
        await vacuumer.end();
      }
    });
  });
}
