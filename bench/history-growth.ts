/**
 * `npm run bench:history`: does history stay flat while jobs end at the c=50 drain rate, with a
 * short `historyExpiration`? A steady drain (the queue kept fed) for `BENCH_HISTORY_SECONDS`
 * (default 60); history's size printed every 5 seconds, and judged over the second half
 * (`checkHistoryGrowth`). The default settings make the old round limit bind: 100 batches of
 * `historyPruneBatchSize` 50 per `scheduledCheck` of 2 s prune at most 2,500 rows/s, below the
 * drain's rate here.
 */
import 'reflect-metadata';
import { openBenchServer, writeResults } from './harness.js';
import { historyGrowth } from './library.js';
import { checkHistoryGrowth } from './targets.js';

const seconds = Number(process.env.BENCH_HISTORY_SECONDS ?? 60);
const options = {
  historyExpiration: Number(process.env.BENCH_HISTORY_EXPIRATION ?? 5),
  scheduledCheck: Number(process.env.BENCH_HISTORY_SCHEDULED_CHECK ?? 2),
  historyPruneBatchSize: Number(process.env.BENCH_HISTORY_PRUNE_BATCH ?? 50),
};

const server = await openBenchServer();
const samples = await server.onFreshDatabase((url) => historyGrowth(url, seconds, options));
await server.stop();

const verdict = checkHistoryGrowth(samples, options);
console.log(
  `\nHistory growth: c=50 drain for ${seconds} s, historyExpiration ${options.historyExpiration} s, ` +
    `scheduledCheck ${options.scheduledCheck} s, historyPruneBatchSize ${options.historyPruneBatchSize}, ` +
    `PostgreSQL from ${server.source}.\n`,
);
console.log('| s | jobs ended | history rows |\n| --- | --- | --- |');
for (const sample of samples.filter((_, i) => (i + 1) % 5 === 0 || i === samples.length - 1)) {
  console.log(`| ${sample.seconds.toFixed(0)} | ${sample.processed} | ${sample.historyRows} |`);
}
console.log(
  `\nSecond half: ${Math.round(verdict.rate)} jobs/s; history peaked at ${verdict.peak} rows, ` +
    `against at most ${Math.round(verdict.bound)} (the jobs of historyExpiration + 2 scheduledCheck): ` +
    `${verdict.flat ? 'flat' : 'GROWING: pruning does not keep up'}.`,
);
console.log(
  `\nWritten to ${writeResults('history-growth', { seconds, options, samples, verdict })}`,
);
