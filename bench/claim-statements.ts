/**
 * `npm run bench:statements`: what the drain's statements cost PostgreSQL alone, with no runner
 * around them. The library's schema is made, and 10,000 no-op jobs queued, by the library itself;
 * a bare loop on two connections then drains them with simplified forms of the library's
 * statements (no cron, trace, queue limits or results):
 *
 * - `delete`: the claim's delete alone (what the floor does, on the library's table);
 * - `claim`: the delete and the history row it inserts (an attempt made visible and fenced);
 * - `claim, then completion`: as the runner does it, each batch's completion written while the
 *   next claim runs;
 * - `claim with the previous completion`: one statement per batch, which completes the batch
 *   claimed before and claims the next.
 *
 * It measures how the drain's database work divides between its writes, and what one round trip
 * per batch instead of two would save, before a runner is changed to try it. Each figure is the
 * median of `BENCH_REPETITIONS` (default 3) interleaved runs, each on a fresh database.
 * `BENCH_STATEMENT_JOBS` sets how many jobs are queued (default 10,000), and
 * `BENCH_STATEMENT_LOOPS` how many loops drain them side by side, each on two connections of its
 * own (default 1; 2 is the statements of the bench's two instances).
 */
import 'reflect-metadata';
import pg from 'pg';
import { formatFigure, openBenchServer } from './harness.js';
import { queueBacklog } from './library.js';
import { summarise } from './stats.js';
import { JOBS, REPETITIONS } from './workloads.js';

const CONCURRENCY = 50;
const QUEUED = Number(process.env.BENCH_STATEMENT_JOBS ?? JOBS);
const LOOPS = Number(process.env.BENCH_STATEMENT_LOOPS ?? 1);

const DELETE = `
  DELETE FROM jobs.jobs c
  WHERE ctid = ANY(ARRAY(SELECT ctid FROM jobs.jobs WHERE "waitUntil" <= now()
                         ORDER BY priority DESC, "waitUntil", seq
                         LIMIT $1 FOR UPDATE SKIP LOCKED))
  RETURNING *`;
const CLAIM = `
  claimed AS (${DELETE}
  ), started AS (
    INSERT INTO jobs."jobHistory" AS h (id, task, state, payload, priority, attempt, "maxRetries",
                                        "wasScheduled", awaited, "executedBy", "createdAt",
                                        "startedAt", queue)
    SELECT id, task, 'active', payload, priority, retries + 1, "maxRetries", "isScheduled", awaited,
           'bench', "createdAt", now(), queue
    FROM claimed
    ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state
  )`;
/** $2: the ids of the batch to complete. */
const COMPLETE = `
  UPDATE jobs."jobHistory" h SET state = 'completed', "completedAt" = now(), "updatedAt" = now()
  FROM unnest($2::uuid[]) AS d(id) WHERE h.id = d.id AND h.state = 'active'`;

type Drain = (pool: pg.Pool) => Promise<void>;

/** Claims with `text` (parameter $1 the batch size) until a claim comes back empty. */
const claimUntilEmpty =
  (name: string, text: string): Drain =>
  async (pool) => {
    while ((await pool.query({ name, text, values: [CONCURRENCY] })).rowCount! > 0);
  };

const DRAINS: Record<string, Drain> = {
  delete: claimUntilEmpty('delete', DELETE),
  claim: claimUntilEmpty('claim', `WITH ${CLAIM} SELECT id FROM claimed`),
  'claim, then completion': async (pool) => {
    const claim = { name: 'claim', text: `WITH ${CLAIM} SELECT id FROM claimed` };
    const complete = { name: 'complete', text: COMPLETE.replace('$2', '$1') };
    let completing: Promise<unknown> = Promise.resolve();
    for (;;) {
      const { rows } = await pool.query({ ...claim, values: [CONCURRENCY] });
      await completing;
      if (rows.length === 0) return;
      completing = pool.query({ ...complete, values: [rows.map((row) => row.id)] });
    }
  },
  'claim with the previous completion': async (pool) => {
    const text = `WITH completed AS (${COMPLETE}), ${CLAIM} SELECT id FROM claimed`;
    let previous: string[] = [];
    do {
      const { rows } = await pool.query({ name: 'both', text, values: [CONCURRENCY, previous] });
      previous = rows.map((row) => row.id);
    } while (previous.length > 0);
  },
};

const server = await openBenchServer();
const msByDrain = new Map<string, number[]>();
for (let i = 0; i < REPETITIONS; i++) {
  for (const [name, drain] of Object.entries(DRAINS)) {
    const ms = await server.onFreshDatabase(async (url) => {
      await queueBacklog(url, 'noop', QUEUED);
      const pool = new pg.Pool({ connectionString: url, max: 2 * LOOPS });
      try {
        const start = performance.now();
        await Promise.all(Array.from({ length: LOOPS }, () => drain(pool)));
        return performance.now() - start;
      } finally {
        await pool.end();
      }
    });
    msByDrain.set(name, [...(msByDrain.get(name) ?? []), ms]);
  }
  console.error(`repetition ${i + 1}/${REPETITIONS} done`);
}
await server.stop();

const jobsPerSecond = new Map(
  [...msByDrain].map(([name, runs]) => [name, summarise(runs.map((ms) => (QUEUED / ms) * 1000))]),
);
const reference = jobsPerSecond.get('claim, then completion')!.median;
console.log(
  `\n${QUEUED} queued no-op jobs drained in batches of ${CONCURRENCY} by the statements alone, ` +
    `in ${LOOPS} loop(s) side by side, ${REPETITIONS} repetitions, PostgreSQL from ${server.source}.\n`,
);
console.log('| statements per batch | jobs/s median (min–max) | ÷ claim, then completion |');
console.log('| --- | --- | --- |');
for (const [name, figure] of jobsPerSecond) {
  console.log(`| ${name} | ${formatFigure(figure)} | ${(figure.median / reference).toFixed(2)} |`);
}
