/**
 * `npm run bench:horizon`: the library under a steady load with and without a held-back vacuum
 * horizon (issue 28 item 4; `bench/steady-load.ts` says how it runs). `npm run bench:peers` runs
 * the same for graphile-worker and pg-boss. Settings, the by default:
 * - `BENCH_HORIZON_RATE` jobs enqueued a second (2,000) and drained by one instance at
 *   `BENCH_HORIZON_CONCURRENCY` (50);
 * - `BENCH_HORIZON_SECONDS` per run (600), figures every `BENCH_HORIZON_INTERVAL` seconds (60);
 * - `BENCH_HORIZON_VACUUM_SECONDS` (60): where the server's autovacuum is off, the run vacuums the
 *   queue's tables that often itself (0: never).
 * Two runs of that length, one after the other.
 */
import 'reflect-metadata';
import { openBenchServer, writeResults } from './harness.js';
import { librarySteady } from './library-long-runs.js';
import { compareHorizon, describeHorizon } from './horizon-comparison.js';
import { autovacuumOn, steadyLoadSettings } from './steady-load.js';

const settings = steadyLoadSettings();
const server = await openBenchServer();
const vacuumed =
  settings.vacuumEvery > 0 && !(await server.onFreshDatabase((url) => autovacuumOn(url)));
const comparisons = await compareHorizon(server, [['nestjs-pg-jobs', librarySteady]], settings);
await server.stop();

console.log(`\nPostgreSQL from ${server.source}, Node ${process.version}.`);
console.log(describeHorizon(comparisons, settings, vacuumed));
console.log(`\nWritten to ${writeResults('horizon', { settings, vacuumed, comparisons })}`);
