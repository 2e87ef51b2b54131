/**
 * `npm run bench:history`: does history stay flat while jobs end at the c=50 drain rate, with a
 * short `historyExpiration`, and what does retention cost the drain? A steady drain (the queue kept
 * fed) for `BENCH_HISTORY_SECONDS` (default 600: the ten minutes; 60 to try it), history's
 * size and the rows deleted one by one printed every 5 seconds, judged over the second half
 * (`checkHistoryGrowth`); then the same drain with retention off (`historyExpiration: 0`), whose
 * rate the first is compared with. History is partitioned (`historyPartitionInterval`, default 15 s
 * here, a quarter of the expiration as the library's default is): expired partitions are dropped
 * whole, and the rows deleted one by one are those of the default partition (the jobs of the first
 * minute, which no partition covers: partitions start at least a minute ahead) and of partitions
 * still held an interval after they were due. The interval must stay well above a job's time in the
 * queue (a few seconds here: the queue is kept 5,000 deep): a partition whose last jobs end later
 * than an interval after it is overdue, and its rows are deleted in batches.
 *
 * Env: BENCH_HISTORY_SECONDS, BENCH_HISTORY_EXPIRATION (s, default 60),
 * BENCH_HISTORY_PARTITION_INTERVAL (s, default 15; 0: no partitions, batched DELETEs as before),
 * BENCH_HISTORY_SCHEDULED_CHECK (s, default 2), BENCH_HISTORY_PRUNE_BATCH (default 1000).
 */
import 'reflect-metadata';
import { openBenchServer, writeResults } from './harness.js';
import { historyGrowth } from './library.js';
import { checkHistoryGrowth, secondHalfRate } from './targets.js';

const seconds = Number(process.env.BENCH_HISTORY_SECONDS ?? 600);
const options = {
  historyExpiration: Number(process.env.BENCH_HISTORY_EXPIRATION ?? 60),
  historyPartitionInterval: Number(process.env.BENCH_HISTORY_PARTITION_INTERVAL ?? 15),
  scheduledCheck: Number(process.env.BENCH_HISTORY_SCHEDULED_CHECK ?? 2),
  historyPruneBatchSize: Number(process.env.BENCH_HISTORY_PRUNE_BATCH ?? 1000),
};

const server = await openBenchServer();
const samples = await server.onFreshDatabase((url) => historyGrowth(url, seconds, options));
const unpruned = await server.onFreshDatabase((url) =>
  historyGrowth(url, seconds, { ...options, historyExpiration: 0, historyPartitionInterval: 0 }),
);
await server.stop();

const verdict = checkHistoryGrowth(samples, options);
const rateWithout = secondHalfRate(unpruned);
const last = samples[samples.length - 1];
console.log(
  `\nHistory growth: c=50 drain for ${seconds} s, historyExpiration ${options.historyExpiration} s, ` +
    `historyPartitionInterval ${options.historyPartitionInterval} s, scheduledCheck ${options.scheduledCheck} s, ` +
    `historyPruneBatchSize ${options.historyPruneBatchSize}, PostgreSQL from ${server.source}.\n`,
);
console.log(
  '| s | jobs ended | history rows | rows deleted one by one |\n| --- | --- | --- | --- |',
);
for (const sample of samples.filter((_, i) => (i + 1) % 5 === 0 || i === samples.length - 1)) {
  console.log(
    `| ${sample.seconds.toFixed(0)} | ${sample.processed} | ${sample.historyRows} | ${sample.deletedRows} |`,
  );
}
console.log(
  `\nSecond half: ${Math.round(verdict.rate)} jobs/s; history peaked at ${verdict.peak} rows ` +
    `(${Math.round(verdict.bound)}: the jobs of historyExpiration + one interval + 3 scheduledCheck at that rate); ` +
    `every sample held at most the jobs that ended in that window before it: ` +
    `${verdict.flat ? 'flat' : 'NO, GROWING: pruning does not keep up'}.`,
);
console.log(
  `Rows deleted one by one: ${last.deletedRows} of ${last.processed} jobs ended ` +
    `(${((100 * last.deletedRows) / Math.max(1, last.processed)).toFixed(1)} %; the rest went with their partitions).`,
);
console.log(
  `The same drain with retention off: ${Math.round(rateWithout)} jobs/s over its second half; with retention ` +
    `${(verdict.rate / rateWithout).toFixed(2)} × that (target ≥ 0.95: ${
      verdict.rate / rateWithout >= 0.95 ? 'met' : 'MISSED'
    }).`,
);
console.log(
  `\nWritten to ${writeResults('history-growth', { seconds, options, samples, verdict, unpruned, rateWithout })}`,
);
