/**
 * `npm run bench:burndown`: a burn-down of a long queue, the figure published peers quote (issue 28
 * item 6). `BENCH_BURNDOWN_JOBS` (default 1,000,000) no-op jobs are queued with no consumer running
 * (500 per `addJobs`), then drained by one instance at concurrency `BENCH_BURNDOWN_CONCURRENCY`
 * (default 50) on a fresh database. Printed: the whole drain's rate, its rate in every
 * `BENCH_BURNDOWN_BUCKET_SECONDS` (default 10) from the first claim, and the time and rate of every
 * `BENCH_BURNDOWN_SLICE` jobs (default 100,000), all on the database's clock (history's end times,
 * read after the drain). The queue is made before the drain, not timed.
 */
import 'reflect-metadata';
import { openBenchServer, writeResults } from './harness.js';
import { burnDown } from './library-long-runs.js';

const settings = {
  jobs: Number(process.env.BENCH_BURNDOWN_JOBS ?? 1_000_000),
  concurrency: Number(process.env.BENCH_BURNDOWN_CONCURRENCY ?? 50),
  bucketSeconds: Number(process.env.BENCH_BURNDOWN_BUCKET_SECONDS ?? 10),
  slice: Number(process.env.BENCH_BURNDOWN_SLICE ?? 100_000),
};

const server = await openBenchServer();
const run = await server.onFreshDatabase((url) => burnDown(url, settings));
await server.stop();

const rate = (jobs: number, seconds: number) => Math.round(jobs / seconds);
console.log(
  `\nBurn-down: ${run.jobs} queued no-op jobs drained by one instance at c=${settings.concurrency}, ` +
    `PostgreSQL from ${server.source}, Node ${process.version}: ${run.seconds.toFixed(1)} s, ` +
    `${rate(run.jobs, run.seconds)} jobs/s from the first claim to the last completion.\n`,
);
console.log(`| from s | to s | jobs completed | jobs/s |\n| ---: | ---: | ---: | ---: |`);
run.buckets.forEach((n, i) => {
  const from = i * settings.bucketSeconds;
  // The last bucket ends with the drain, not a full bucket later.
  const to = Math.min(from + settings.bucketSeconds, run.seconds);
  console.log(`| ${from} | ${to.toFixed(1)} | ${n} | ${rate(n, to - from)} |`);
});
console.log(`\n| jobs completed | at s | jobs/s over the slice |\n| ---: | ---: | ---: |`);
run.slices.forEach((slice, i) => {
  const previous = run.slices[i - 1] ?? { jobs: 0, seconds: 0 };
  console.log(
    `| ${slice.jobs} | ${slice.seconds.toFixed(1)} | ${rate(slice.jobs - previous.jobs, slice.seconds - previous.seconds)} |`,
  );
});
console.log(`\nWritten to ${writeResults('burn-down', { settings, ...run })}`);
