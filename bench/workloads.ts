/**
 * The workloads, each measured for the library and for the baseline on the same database server,
 * one after the other, in one process run. A workload gets a fresh database of its own.
 */
export const JOBS = 10_000;
export const BATCH_SIZE = 500;
export const LATENCY_JOBS = 200;
export const LATENCY_GAP_MS = 20;
export const REPETITIONS = Number(process.env.BENCH_REPETITIONS ?? 3);
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

/** What one side (library or baseline) must implement. */
export interface QueueUnderTest {
  /** `JOBS` enqueues, one after another; returns elapsed ms. */
  enqueueOneByOne(url: string): Promise<number>;
  /** `JOBS` enqueues in batches of `BATCH_SIZE`; returns elapsed ms. */
  enqueueBatches(url: string): Promise<number>;
  /**
   * Drains `jobs` (default `JOBS`) queued no-op jobs with `instances` consumers of `concurrency`
   * each; returns elapsed ms and peak RSS.
   */
  drain(
    url: string,
    concurrency: number,
    instances: number,
    jobs?: number,
  ): Promise<{ ms: number; peakRssMiB: number }>;
  /** Enqueue-to-start latencies of `LATENCY_JOBS` jobs added `LATENCY_GAP_MS` apart to an idle consumer, in ms. */
  latency(url: string): Promise<number[]>;
}
