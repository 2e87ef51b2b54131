/*
 * The histogram of a task's durations in its per-minute rows (`"jobTaskMinute"`): fixed buckets,
 * spaced by a constant ratio, so that the rows of any window add up bucket by bucket and its
 * percentiles are read from the sum, however many minutes it spans.
 *
 * Bucket 0 holds durations below `DURATION_BUCKET_BASE_MS`; bucket i (1 to `LAST_DURATION_BUCKET`)
 * holds [base * ratio^(i-1), base * ratio^i); the last one also holds every longer duration. A
 * bucket stands for its geometric middle, base * ratio^(i-1/2), which is at most sqrt(ratio) away
 * from any duration in it, either way: with a ratio of 1.2, a percentile read from buckets is
 * within +9.5 % and -8.7 % of the exact one (`DURATION_PERCENTILE_ERROR`), plus 0.05 ms for
 * durations under 0.1 ms, for durations up to about 24 h (the last bucket's start). The exact
 * percentile interpolates between two neighbouring durations, as `percentile_cont` does, and so
 * does the estimate between their buckets' middles: a weighted mean of two values each within the
 * bound is within it too. `duration-buckets.spec.ts` holds the bound.
 */

/** Durations below this (ms) are all in bucket 0. */
export const DURATION_BUCKET_BASE_MS = 0.1;
/** Each bucket's end over its start. */
export const DURATION_BUCKET_RATIO = 1.2;
/** The last bucket: it starts at about 24.6 h and holds every longer duration. */
export const LAST_DURATION_BUCKET = 114;
/**
 * The largest relative error of a duration percentile read from buckets: sqrt(1.2) - 1, about
 * 9.5 % above the exact value (8.7 % below), plus up to 0.05 ms for durations under 0.1 ms.
 */
export const DURATION_PERCENTILE_ERROR = Math.sqrt(DURATION_BUCKET_RATIO) - 1;

/** The bucket of a duration in ms, as `durationBucketSql` computes it in the database. */
export function durationBucket(ms: number): number {
  if (!(ms >= DURATION_BUCKET_BASE_MS)) return 0;
  const bucket =
    Math.floor(Math.log(ms / DURATION_BUCKET_BASE_MS) / Math.log(DURATION_BUCKET_RATIO)) + 1;
  return Math.min(LAST_DURATION_BUCKET, bucket);
}

/**
 * The bucket of the duration `ms` (an SQL expression of milliseconds, float8), in SQL: the same
 * arithmetic as `durationBucket`. A duration on a bucket's edge may land in either neighbour
 * through rounding; both middles are within the bound of it.
 */
export function durationBucketSql(ms: string): string {
  return `CASE WHEN ${ms} < ${DURATION_BUCKET_BASE_MS} THEN 0
    ELSE least(${LAST_DURATION_BUCKET},
               floor(ln(${ms} / ${DURATION_BUCKET_BASE_MS}) / ln(${DURATION_BUCKET_RATIO}))::int + 1) END`;
}

/** The duration a bucket stands for: its geometric middle (half the base for bucket 0). */
export function bucketMiddleMs(bucket: number): number {
  if (bucket <= 0) return DURATION_BUCKET_BASE_MS / 2;
  return DURATION_BUCKET_BASE_MS * DURATION_BUCKET_RATIO ** (bucket - 0.5);
}

/**
 * The percentiles `quantiles` (0 to 1) of the durations counted in `histogram` (bucket -> count),
 * each interpolated as `percentile_cont` does between the two durations around its rank, each
 * duration standing for its bucket's middle; `null` when the histogram counts nothing.
 */
export function percentilesFromBuckets(
  histogram: ReadonlyMap<number, number>,
  quantiles: readonly number[],
): number[] | null {
  const buckets = [...histogram.entries()]
    .filter(([, count]) => count > 0)
    .sort(([a], [b]) => a - b);
  const total = buckets.reduce((sum, [, count]) => sum + count, 0);
  if (total === 0) return null;
  /** The middle of the bucket of the duration of rank `rank` (0: the shortest). */
  const durationAt = (rank: number): number => {
    let seen = 0;
    for (const [bucket, count] of buckets) {
      seen += count;
      if (rank < seen) return bucketMiddleMs(bucket);
    }
    return bucketMiddleMs(buckets[buckets.length - 1][0]);
  };
  return quantiles.map((quantile) => {
    const position = quantile * (total - 1);
    const below = Math.floor(position);
    const lower = durationAt(below);
    const fraction = position - below;
    return fraction === 0 ? lower : lower + fraction * (durationAt(below + 1) - lower);
  });
}
