/**
 * `npm run bench:peers`: this library beside graphile-worker and pg-boss on fresh databases of one
 * server in one process run, in the parts `BENCH_PEERS_PARTS` names (comma-separated; all three by
 * default):
 * - `speed`: the drain and latency workloads of `npm run bench` for the library, the baseline and
 *   the peers. Each figure is the median of REPETITIONS runs (with min and max), printed with its
 *   ratio to the baseline's and to the library's;
 * - `costs`: the cost per job of each queue's enqueue (in batches) and drain (c=50), rows written
 *   and WAL bytes, for the library, the baseline, the floor and the peers (`bench/job-costs.ts`,
 *   as `npm run bench:costs` counts them);
 * - `horizon`: the steady load of `npm run bench:horizon` with and without a held-back vacuum
 *   horizon, for the library and the peers (`bench/steady-load.ts`; `BENCH_HORIZON_*` set it: two
 *   runs of 10 minutes per queue by default, an hour in all).
 * Everything is also written as JSON to bench/results/. The peers (dev dependencies) need Node
 * 22.18 or later: on an older Node it says so and exits cleanly.
 */
import 'reflect-metadata';
import { baseline, floor } from './baseline.js';
import {
  formatFigure,
  openBenchServer,
  recordDrain,
  recordLatency,
  unitOf,
  writeResults,
} from './harness.js';
import type { Sample } from './harness.js';
import { describeCosts, enqueueAndDrainCosts } from './job-costs.js';
import type { Costs } from './db-costs.js';
import { library } from './library.js';
import { librarySteady } from './library-long-runs.js';
import { loadPeers } from './peer-sides.js';
import { summarise } from './stats.js';
import { compareHorizon, describeHorizon } from './horizon-comparison.js';
import { autovacuumOn, steadyLoadSettings } from './steady-load.js';
import { JOBS, LATENCY_JOBS, REPETITIONS } from './workloads.js';
import type { DrainAndLatency } from './workloads.js';

const loaded = await loadPeers();
if ('skipped' in loaded) {
  console.log(`bench:peers skipped: ${loaded.skipped}.`);
  process.exit(0);
}
const { peers } = loaded;
const parts = new Set((process.env.BENCH_PEERS_PARTS ?? 'speed,costs,horizon').split(','));

interface Side {
  name: string;
  queue: DrainAndLatency;
  /** How it is set up, printed under the table. */
  settings: string;
}

const BASELINE = 'baseline';
const LIBRARY = 'nestjs-pg-jobs';
const SIDES: readonly Side[] = [
  { name: BASELINE, queue: baseline, settings: 'bench/baseline.ts, as in `npm run bench`' },
  {
    name: LIBRARY,
    queue: library,
    settings:
      "bench/library.ts, as in `npm run bench`: `concurrency` c, other options at their defaults but the drain's `pollingCheck` (0.5 s)",
  },
  ...peers,
];

/** The rows of the printed table; the JSON also has each drain's peak RSS and the latency's max. */
const PRINTED = ['drain c=10 x1', 'drain c=50 x1', 'latency p50', 'latency p95', 'latency p99'];

const server = await openBenchServer();
const report: Record<string, unknown> = {
  node: process.version,
  settings: Object.fromEntries(SIDES.map((side) => [side.name, side.settings])),
};

if (parts.has('speed')) {
  /** The workloads, each adding its figures to one side's sample of a repetition. */
  const WORKLOADS: readonly ((sample: Sample, queue: DrainAndLatency) => Promise<unknown>)[] = [
    (sample, queue) => recordDrain(sample, server, queue, 10, 1),
    (sample, queue) => recordDrain(sample, server, queue, 50, 1),
    (sample, queue) => recordLatency(sample, server, queue),
  ];

  /** Each side's samples, one per repetition, in the order of SIDES. */
  const samples: Sample[][] = SIDES.map(() => []);
  for (let i = 0; i < REPETITIONS; i++) {
    const repetition: Sample[] = SIDES.map(() => ({}));
    // Each workload is run by every side in turn, starting with a different side every repetition,
    // so that drift in the machine's load (it is shared) hits every side alike.
    const order = SIDES.map((_, s) => (s + i) % SIDES.length);
    for (const workload of WORKLOADS) {
      for (const s of order) await workload(repetition[s], SIDES[s].queue);
    }
    repetition.forEach((sample, s) => samples[s].push(sample));
    console.error(`repetition ${i + 1}/${REPETITIONS} done`);
  }

  const rows = Object.keys(samples[0][0]).map((workload) => ({
    workload,
    ...unitOf(workload),
    figures: Object.fromEntries(
      SIDES.map((side, s) => [side.name, summarise(samples[s].map((sample) => sample[workload]))]),
    ),
  }));

  const ratio = (value: number, to: number) => (value / to).toFixed(2);
  const lines = [
    `| workload | unit | queue | median (min–max) | ÷ baseline | ÷ nestjs-pg-jobs |`,
    `| --- | --- | --- | --- | --- | --- |`,
    ...rows
      .filter((row) => PRINTED.includes(row.workload))
      .flatMap((row) =>
        SIDES.map((side) => {
          const figure = row.figures[side.name];
          return `| ${row.workload} | ${row.unit} | ${side.name} | ${formatFigure(figure)} | ${
            side.name === BASELINE ? '—' : ratio(figure.median, row.figures[BASELINE].median)
          } | ${side.name === LIBRARY ? '—' : ratio(figure.median, row.figures[LIBRARY].median)} |`;
        }),
      ),
  ];
  console.log(
    `\n${JOBS} no-op jobs per drain (one instance), ${LATENCY_JOBS} for latency (an idle consumer at concurrency 10), ${REPETITIONS} repetitions, PostgreSQL from ${server.source}, Node ${process.version}.`,
  );
  console.log(
    'Ratios of medians: above 1 is faster for a drain (jobs/s), slower for a latency (ms).\n',
  );
  console.log(lines.join('\n'));
  report.speed = { jobs: JOBS, latencyJobs: LATENCY_JOBS, repetitions: REPETITIONS, rows };
}

if (parts.has('costs')) {
  const counted: readonly (readonly [string, DrainAndLatency])[] = [
    [LIBRARY, library],
    [BASELINE, baseline],
    ['floor', floor],
    ...peers.map((peer) => [peer.name, peer.queue] as const),
  ];
  const costs: Record<string, Record<string, Costs>> = {};
  for (const [name, queue] of counted) {
    for (const [workload, perJob] of Object.entries(
      await enqueueAndDrainCosts(server, queue, JOBS),
    )) {
      (costs[workload] ??= {})[name] = perJob;
    }
    console.error(`${name} counted`);
  }
  console.log(
    `\nCost per job: a run of ${JOBS} jobs less a run of none, over ${JOBS}, enqueue and drain apart.`,
  );
  console.log(
    describeCosts(
      costs,
      counted.map(([name]) => name),
    ),
  );
  report.costs = { jobs: JOBS, perJob: costs };
}

if (parts.has('horizon')) {
  const settings = steadyLoadSettings();
  const vacuumed =
    settings.vacuumEvery > 0 && !(await server.onFreshDatabase((url) => autovacuumOn(url)));
  const comparisons = await compareHorizon(
    server,
    [[LIBRARY, librarySteady], ...peers.map((peer) => [peer.name, peer.steady] as const)],
    settings,
  );
  console.log(`\n${describeHorizon(comparisons, settings, vacuumed)}`);
  report.horizon = { settings, vacuumed, comparisons };
}
await server.stop();

console.log(
  `\nSettings (c = the workload's concurrency):\n${SIDES.map((side) => `- ${side.name}: ${side.settings}`).join('\n')}`,
);
console.log(`\nWritten to ${writeResults('peers', report)}`);
