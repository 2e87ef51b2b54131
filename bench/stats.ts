/** Median, min and max of repeated measurements: what every figure in the table is made of. */
export interface Figure {
  median: number;
  min: number;
  max: number;
}

export function summarise(values: readonly number[]): Figure {
  const sorted = [...values].sort((a, b) => a - b);
  return { median: percentile(sorted, 50), min: sorted[0], max: sorted[sorted.length - 1] };
}

/** Nearest-rank percentile of already sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** Latency distribution of one run, in ms. */
export interface Latency {
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export function latency(samplesMs: readonly number[]): Latency {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1],
  };
}

/** Samples the process's resident set size until stopped; returns the peak, in MiB. */
export function trackPeakRss(intervalMs = 25): () => number {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, intervalMs);
  return () => {
    clearInterval(timer);
    peak = Math.max(peak, process.memoryUsage.rss());
    return peak / (1024 * 1024);
  };
}

export async function pollUntil(
  check: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
  intervalMs = 10,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
