/**
 * The workloads, each measured for every queue a bench compares (the library, the baseline, and in
 * `npm run bench:peers` graphile-worker and pg-boss) on the same database server, one after the
 * other, in one process run. A workload gets a fresh database of its own.
 */
import pg from 'pg';
import { pollUntil } from './stats.js';

export const JOBS = 10_000;
export const BATCH_SIZE = 500;
export const LATENCY_JOBS = 200;
export const LATENCY_GAP_MS = 20;
export const REPETITIONS = Number(process.env.BENCH_REPETITIONS ?? 3);

/**
 * Clients the bench opens to watch a run (a drain's completion count), not the queue under test's:
 * `npm run bench:costs` counts none of their statements.
 */
export const watchingClients = new WeakSet<pg.Client>();
/**
 * Queue sizes the c=50 drain is also measured at (`BENCH_QUEUE_SIZES`, comma-separated; empty for
 * none): a queue's cost may grow with its length, the floor's does not.
 */
export const QUEUE_SIZES = (process.env.BENCH_QUEUE_SIZES ?? '50000,200000')
  .split(',')
  .filter(Boolean)
  .map(Number);
/** Rows of ended jobs in history for the library's drain on a full history (`BENCH_HISTORY_ROWS`). */
export const HISTORY_ROWS = Number(process.env.BENCH_HISTORY_ROWS ?? 1_000_000);

/** The library's drain of a flow 1 → JOBS − 2 → 1 (`drainFlow`), c=50 x1. */
export const FLOW_DRAIN = `drain c=50 x1, flow 1 → ${JOBS - 2} → 1`;
/** Durable steps each job of `STEPPED_DRAIN` takes. */
export const STEPS_PER_JOB = 3;
/** The library's drain of a no-op task that takes `STEPS_PER_JOB` durable steps (`drainStepped`). */
export const STEPPED_DRAIN = `drain c=50 x1, ${STEPS_PER_JOB} ctx.step per job`;
/** How long after its last dependency completed the sink of `FLOW_DRAIN` started. */
export const FLOW_SINK_LATENCY = "latency of a flow's sink after its last dependency";

/** What every queue the benches compare does: drain a backlog, and start a job on an idle queue. */
export interface DrainAndLatency {
  /**
   * Drains `jobs` (default `JOBS`) queued no-op jobs with `instances` consumers of `concurrency`
   * each; returns elapsed ms and peak RSS. `backlogQueued`, when given, is awaited once the jobs
   * are queued and before any consumer starts: where `npm run bench:costs` starts counting.
   */
  drain(
    url: string,
    concurrency: number,
    instances: number,
    jobs?: number,
    backlogQueued?: () => Promise<void>,
  ): Promise<{ ms: number; peakRssMiB: number }>;
  /** Enqueue-to-start latencies of `LATENCY_JOBS` jobs added `LATENCY_GAP_MS` apart to an idle consumer, in ms. */
  latency(url: string): Promise<number[]>;
}

/** What one side of `npm run bench` (library or baseline) must implement. */
export interface QueueUnderTest extends DrainAndLatency {
  /** `jobs` (default `JOBS`) enqueues, one after another; returns elapsed ms. */
  enqueueOneByOne(url: string, jobs?: number): Promise<number>;
  /** `jobs` (default `JOBS`) enqueues in batches of `BATCH_SIZE`; returns elapsed ms. */
  enqueueBatches(url: string, jobs?: number): Promise<number>;
}

/**
 * Calls `addBatch` with the size of each batch of `BATCH_SIZE` that makes up `jobs` (default
 * `JOBS`), one after another.
 */
export async function inBatches(
  addBatch: (size: number) => Promise<unknown>,
  jobs = JOBS,
): Promise<void> {
  for (let offset = 0; offset < jobs; offset += BATCH_SIZE) {
    await addBatch(Math.min(BATCH_SIZE, jobs - offset));
  }
}

/**
 * The latency workload's producer: adds `LATENCY_JOBS` jobs `LATENCY_GAP_MS` apart with `add`
 * (which returns the job's id), waits until `startedAt` (handler-start times by job id, filled by
 * the consumer) has them all, and returns each one's enqueue-to-start time. The clock starts
 * before the enqueue is sent, as a caller's would.
 */
export async function spacedLatencies(
  add: (i: number) => Promise<string>,
  startedAt: ReadonlyMap<string, number>,
): Promise<number[]> {
  const addedAt = new Map<string, number>();
  for (let i = 0; i < LATENCY_JOBS; i++) {
    const sentAt = performance.now();
    addedAt.set(await add(i), sentAt);
    await new Promise((resolve) => setTimeout(resolve, LATENCY_GAP_MS));
  }
  await pollUntil(
    async () => [...addedAt.keys()].every((id) => startedAt.has(id)),
    30_000,
    'latency samples',
  );
  return [...addedAt].map(([id, sent]) => startedAt.get(id)! - sent);
}

/**
 * Waits, on a connection of its own, until `completed` (a query returning `n`) counts `jobs`
 * (default `JOBS`), then returns the drain's length on the database's clock as `span` (a query
 * returning `ms`) computes it from the queue's own timestamps: from the first claim to the last
 * completion, so that booting the consumers is not part of it. Both queries get `params`. The clock
 * is the database's, so polling rarely costs no precision; polling often would: each count reads
 * the table, and that is CPU the drain being measured no longer has.
 */
export async function drainSpanOnDatabaseClock(
  url: string,
  completed: string,
  span: string,
  { jobs = JOBS, params = [] }: { jobs?: number; params?: unknown[] } = {},
): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  watchingClients.add(client);
  await client.connect();
  try {
    await pollUntil(
      async () => (await client.query(completed, params)).rows[0].n === jobs,
      600_000,
      'the drain',
      250,
    );
    return Number((await client.query(span, params)).rows[0].ms);
  } finally {
    await client.end();
  }
}
