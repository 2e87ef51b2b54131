/**
 * Two plain-`pg` queues the library is measured against, one narrow table each, multi-row inserts,
 * a batched `DELETE ... FOR UPDATE SKIP LOCKED ... RETURNING` claim and `LISTEN/NOTIFY`:
 * - `baseline` also records each batch's completion in a second narrow table (a queue that keeps
 *   some record of what ran);
 * - `floor` writes nothing after the claim: the least a Postgres queue can do. No history, no
 *   retries, no fencing.
 */
import pg from 'pg';
import { pollUntil, trackPeakRss } from './stats.js';
import { JOBS, inBatches, spacedLatencies } from './workloads.js';
import type { QueueUnderTest } from './workloads.js';

const SCHEMA = `
  CREATE TABLE q (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, task text NOT NULL,
                  payload jsonb NOT NULL, run_at timestamptz NOT NULL DEFAULT now());
  CREATE INDEX q_run_at ON q (run_at, id);
  CREATE TABLE done (id bigint PRIMARY KEY, finished_at timestamptz NOT NULL DEFAULT now());`;
const CLAIM = `
  DELETE FROM q WHERE id IN (SELECT id FROM q WHERE run_at <= now() ORDER BY run_at, id LIMIT $1
                             FOR UPDATE SKIP LOCKED) RETURNING id, task, payload`;
const COMPLETE = `INSERT INTO done (id) SELECT unnest($1::bigint[])`;

async function withPool<T>(
  url: string,
  size: number,
  fn: (pool: pg.Pool) => Promise<T>,
): Promise<T> {
  const pool = new pg.Pool({ connectionString: url, max: size });
  pool.on('error', () => undefined);
  try {
    await pool.query(SCHEMA).catch(() => undefined);
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

function insertBatches(pool: pg.Pool, jobs = JOBS): Promise<void> {
  return inBatches(
    (size) =>
      pool.query(
        `WITH i AS (INSERT INTO q (task, payload) SELECT 'noop', p FROM unnest($1::jsonb[]) p RETURNING 1)
         SELECT pg_notify('q', '') FROM (SELECT 1 FROM i LIMIT 1) x`,
        [Array.from({ length: size }, () => '{}')],
      ),
    jobs,
  );
}

function plainQueue({ recordsCompletion }: { recordsCompletion: boolean }): QueueUnderTest {
  return {
    enqueueOneByOne: (url, jobs = JOBS) =>
      withPool(url, 10, async (pool) => {
        const start = performance.now();
        for (let i = 0; i < jobs; i++) {
          await pool.query(
            `WITH i AS (INSERT INTO q (task, payload) VALUES ('noop', $1) RETURNING 1) SELECT pg_notify('q', '') FROM i`,
            ['{}'],
          );
        }
        return performance.now() - start;
      }),

    enqueueBatches: (url, jobs) =>
      withPool(url, 10, async (pool) => {
        const start = performance.now();
        await insertBatches(pool, jobs);
        return performance.now() - start;
      }),

    drain: (url, concurrency, instances, jobs = JOBS, backlogQueued) =>
      withPool(url, 10 * instances, async (pool) => {
        await insertBatches(pool, jobs);
        await backlogQueued?.();
        const peak = trackPeakRss();
        const start = performance.now();
        let finished = 0;
        // Each consumer claims a batch the size of its concurrency, "runs" it, records it done.
        const consumer = async () => {
          for (;;) {
            const { rows } = await pool.query(CLAIM, [concurrency]);
            if (rows.length === 0) return;
            await Promise.all(rows.map(async () => undefined));
            if (recordsCompletion) await pool.query(COMPLETE, [rows.map((row) => row.id)]);
            finished += rows.length;
          }
        };
        await Promise.all(Array.from({ length: instances }, consumer));
        await pollUntil(async () => finished === jobs, 600_000, 'the plain drain');
        return { ms: performance.now() - start, peakRssMiB: peak() };
      }),

    latency: (url) =>
      withPool(url, 4, async (pool) => {
        const listener = new pg.Client({ connectionString: url });
        listener.on('error', () => undefined);
        await listener.connect();
        // Claim times by job id: a claim may come back before the insert that notified it does.
        const claimedAt = new Map<string, number>();
        let claiming = Promise.resolve();
        listener.on('notification', () => {
          claiming = claiming.then(async () => {
            const { rows } = await pool.query(CLAIM, [10]);
            const now = performance.now();
            for (const row of rows) claimedAt.set(String(row.id), now);
          });
        });
        await listener.query('LISTEN q');
        try {
          return await spacedLatencies(async () => {
            const { rows } = await pool.query(
              `WITH i AS (INSERT INTO q (task, payload) VALUES ('noop', '{}') RETURNING id)
               SELECT id, pg_notify('q', '') FROM i`,
            );
            return String(rows[0].id);
          }, claimedAt);
        } finally {
          await listener.end();
        }
      }),
  };
}

export const baseline = plainQueue({ recordsCompletion: true });
export const floor = plainQueue({ recordsCompletion: false });
