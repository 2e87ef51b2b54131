import {
  DURATION_BUCKET_BASE_MS,
  DURATION_PERCENTILE_ERROR,
  LAST_DURATION_BUCKET,
  bucketMiddleMs,
  durationBucket,
  percentilesFromBuckets,
} from './duration-buckets.js';

const QUANTILES = [0.5, 0.95, 0.99];

/** `percentile_cont`: linear interpolation between the two values around the rank. */
function exactPercentiles(values: number[], quantiles: readonly number[]): number[] {
  const sorted = [...values].sort((a, b) => a - b);
  return quantiles.map((quantile) => {
    const position = quantile * (sorted.length - 1);
    const below = Math.floor(position);
    const fraction = position - below;
    return fraction === 0
      ? sorted[below]
      : sorted[below] + fraction * (sorted[below + 1] - sorted[below]);
  });
}

function histogramOf(values: number[]): Map<number, number> {
  const histogram = new Map<number, number>();
  for (const value of values) {
    const bucket = durationBucket(value);
    histogram.set(bucket, (histogram.get(bucket) ?? 0) + 1);
  }
  return histogram;
}

/** A reproducible generator (mulberry32): a failure names its seed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SHAPES: Record<string, (next: () => number) => number> = {
  // From 0.1 ms to an hour, evenly on a log scale.
  'log-uniform': (next) => DURATION_BUCKET_BASE_MS * 10 ** (next() * 7.5),
  // Most fast, a slow tail: what a task that calls an API looks like.
  'fast with a slow tail': (next) => (next() < 0.97 ? 5 + next() * 20 : 2000 + next() * 30_000),
  // All alike: every percentile within one or two buckets.
  narrow: (next) => 120 + next() * 3,
  // Two modes far apart: the median falls between them.
  'two modes': (next) => (next() < 0.5 ? 3 + next() : 900 + next() * 100),
};

describe('duration buckets', () => {
  it('puts every duration in a bucket whose middle is within the bound of it', () => {
    const next = random(7);
    const outside: string[] = [];
    for (let i = 0; i < 100_000; i++) {
      const ms = DURATION_BUCKET_BASE_MS * 10 ** (next() * 8.9);
      const bucket = durationBucket(ms);
      if (bucket < 1 || bucket > LAST_DURATION_BUCKET) outside.push(`${ms} in bucket ${bucket}`);
      if (bucket === LAST_DURATION_BUCKET) continue;
      const ratio = bucketMiddleMs(bucket) / ms;
      if (
        ratio > 1 + DURATION_PERCENTILE_ERROR + 1e-12 ||
        ratio < 1 / (1 + DURATION_PERCENTILE_ERROR) - 1e-12
      ) {
        outside.push(`${ms} stands for ${bucketMiddleMs(bucket)}`);
      }
    }
    expect(outside).toEqual([]);
    expect(durationBucket(0)).toBe(0);
    expect(durationBucket(0.099)).toBe(0);
    expect(durationBucket(24 * 3600_000)).toBe(LAST_DURATION_BUCKET - 1);
    expect(durationBucket(48 * 3600_000)).toBe(LAST_DURATION_BUCKET);
  });

  for (const [shape, draw] of Object.entries(SHAPES)) {
    it(`gives p50, p95 and p99 within ${(DURATION_PERCENTILE_ERROR * 100).toFixed(1)} % of the exact ones: ${shape}`, () => {
      for (const [seed, size] of [
        [1, 1],
        [2, 2],
        [3, 7],
        [4, 100],
        [5, 1000],
        [6, 50_000],
      ]) {
        const next = random(seed);
        const values = Array.from({ length: size }, () => draw(next));
        const estimated = percentilesFromBuckets(histogramOf(values), QUANTILES)!;
        exactPercentiles(values, QUANTILES).forEach((exact, i) => {
          const error = Math.abs(estimated[i] - exact) / exact;
          if (error > DURATION_PERCENTILE_ERROR) {
            throw new Error(
              `seed ${seed}, ${size} values: p${QUANTILES[i] * 100} ${estimated[i]} for ${exact} (${error})`,
            );
          }
        });
      }
    });
  }

  it('is off by at most 0.05 ms below 0.1 ms, and gives nothing for an empty histogram', () => {
    const [p50] = percentilesFromBuckets(histogramOf([0.01, 0.02, 0.09]), [0.5])!;
    expect(Math.abs(p50 - 0.02)).toBeLessThanOrEqual(DURATION_BUCKET_BASE_MS / 2);
    expect(percentilesFromBuckets(new Map(), QUANTILES)).toBeNull();
    expect(percentilesFromBuckets(new Map([[3, 0]]), QUANTILES)).toBeNull();
  });
});
