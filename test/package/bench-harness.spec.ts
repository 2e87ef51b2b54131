import { unitOf } from '../../bench/harness.js';
import type { Figure } from '../../bench/stats.js';
import { checkHistoryGrowth, checkTargets, describeCheck } from '../../bench/targets.js';
import { BATCH_SIZE, JOBS, inBatches } from '../../bench/workloads.js';

// What the benches compute from their figures, checked without running one: no figure here is
// measured, and nothing is timed.

const figure = (median: number): Figure => ({ median, min: median, max: median }) as Figure;

it('splits a count of jobs into batches of BATCH_SIZE, the last one short, and JOBS by default', async () => {
  const sizes: number[] = [];
  await inBatches(async (size) => sizes.push(size), 2 * BATCH_SIZE + 7);
  expect(sizes).toEqual([BATCH_SIZE, BATCH_SIZE, 7]);

  const byDefault: number[] = [];
  await inBatches(async (size) => byDefault.push(size));
  expect(byDefault.reduce((a, b) => a + b, 0)).toBe(JOBS);

  const none: number[] = [];
  await inBatches(async (size) => none.push(size), 0);
  expect(none).toEqual([]);
});

it("names each workload's unit and which way is better", () => {
  expect(unitOf('drain c=50 x1')).toEqual({ unit: 'jobs/s', better: 'higher' });
  expect(unitOf('drain c=50 x1 peak RSS')).toEqual({ unit: 'MiB', better: 'lower' });
  expect(unitOf('latency p99')).toEqual({ unit: 'ms', better: 'lower' });
});

it('judges a throughput target at least its threshold and a latency target at most, each against its reference', () => {
  // The library at half the floor's drain and at the floor's latency; the baseline between.
  const sides = (workload: string) =>
    workload.startsWith('latency')
      ? { library: figure(4), baseline: figure(4), floor: figure(4) }
      : { library: figure(500), baseline: figure(600), floor: figure(1000) };
  const checks = checkTargets(sides);
  const check = (workload: string) => checks.find((c) => c.target.workload === workload)!;

  expect(check('drain c=50 x1').value).toBeCloseTo(0.5);
  expect(check('drain c=50 x1').met).toBe(false);
  expect(describeCheck(check('drain c=50 x1'))).toMatch(/MISSED, 40 points short/);
  expect(check('drain c=50 x2').value).toBeCloseTo(500 / 600);
  expect(check('latency p50').met).toBe(true);
  expect(check('latency p99').met).toBe(true);
});

it("judges history flat when, over the run's second half, it never exceeds the jobs of historyExpiration plus two scheduledChecks", () => {
  const settings = { historyExpiration: 5, scheduledCheck: 2 };
  // 1,000 jobs/s for 10 s: at most 9,000 rows is flat.
  const run = (history: (second: number) => number) =>
    Array.from({ length: 10 }, (_, i) => ({
      seconds: i + 1,
      processed: 1000 * (i + 1),
      historyRows: history(i + 1),
      deletedRows: 0,
    }));
  const flat = checkHistoryGrowth(
    run((s) => Math.min(s, 6) * 1000),
    settings,
  );
  expect(flat).toEqual({ rate: 1000, bound: 9000, peak: 6000, flat: true });
  // Pruning 500 rows/s short: history grows by as much, past the bound by the end.
  const growing = checkHistoryGrowth(
    run((s) => s * 1000 - 500 * Math.max(0, s - 5) + 5000),
    settings,
  );
  expect(growing.flat).toBe(false);
  // A drain that slows down (2,000 jobs/s, then 1,000) keeps the jobs of its faster seconds for a
  // window: flat, though more than the window at the half's rate.
  const slowing = Array.from({ length: 20 }, (_, i) => {
    const ended = (s: number) => (s <= 10 ? 2000 * s : 20_000 + 1000 * (s - 10));
    return {
      seconds: i + 1,
      processed: ended(i + 1),
      historyRows: ended(i + 1) - ended(Math.max(0, i + 1 - 9)),
      deletedRows: 0,
    };
  });
  const slowed = checkHistoryGrowth(slowing, settings);
  expect(slowed.peak).toBeGreaterThan(slowed.bound);
  expect(slowed.flat).toBe(true);
  // Partitioned: a partition's jobs stay up to one interval past their expiration, and the round
  // that drops it may come one check later.
  expect(
    checkHistoryGrowth(
      run((s) => Math.min(s, 6) * 1000),
      { ...settings, historyPartitionInterval: 4 },
    ).bound,
  ).toBe(1000 * (5 + 4 + 3 * 2));
});
