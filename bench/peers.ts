/**
 * `npm run bench:peers`: the drain and latency workloads of `npm run bench` for the library, the
 * baseline, graphile-worker and pg-boss, on fresh databases of one server in one process run. Each
 * figure is the median of REPETITIONS runs (with min and max), printed with its ratio to the
 * baseline's and to the library's, and written as JSON to bench/results/. The peers (dev
 * dependencies) need Node 22.18 or later: on an older Node it says so and exits cleanly.
 */
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { baseline } from './baseline.js';
import {
  formatFigure,
  openBenchServer,
  recordDrain,
  recordLatency,
  unitOf,
  writeResults,
} from './harness.js';
import type { Sample } from './harness.js';
import { library } from './library.js';
import { summarise } from './stats.js';
import { JOBS, LATENCY_JOBS, REPETITIONS } from './workloads.js';
import type { DrainAndLatency } from './workloads.js';

// graphile-worker 0.18 supports Node 22.18+, pg-boss 12 Node 22.12+ (their `engines`): a figure
// measured on an older Node would not be theirs. They are imported only past this check, so that
// nothing in them can stop it from exiting cleanly.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.log(
    `bench:peers skipped: graphile-worker 0.18 and pg-boss 12 need Node 22.18 or later, this is ${process.version}.`,
  );
  process.exit(0);
}
const { GRAPHILE_WORKER_SETTINGS, graphileWorker } = await import('./graphile-worker.js');
const { PG_BOSS_SETTINGS, pgBoss } = await import('./pg-boss.js');

const devDependencies: Record<string, string> = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
).devDependencies;

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
  {
    name: `graphile-worker ${devDependencies['graphile-worker']}`,
    queue: graphileWorker,
    settings: GRAPHILE_WORKER_SETTINGS,
  },
  { name: `pg-boss ${devDependencies['pg-boss']}`, queue: pgBoss, settings: PG_BOSS_SETTINGS },
];

/** The rows of the printed table; the JSON also has each drain's peak RSS and the latency's max. */
const PRINTED = ['drain c=10 x1', 'drain c=50 x1', 'latency p50', 'latency p95', 'latency p99'];

const server = await openBenchServer();

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
await server.stop();

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
console.log(
  `\nSettings (c = the workload's concurrency):\n${SIDES.map((side) => `- ${side.name}: ${side.settings}`).join('\n')}`,
);

const file = writeResults('peers', {
  node: process.version,
  jobs: JOBS,
  latencyJobs: LATENCY_JOBS,
  repetitions: REPETITIONS,
  settings: Object.fromEntries(SIDES.map((side) => [side.name, side.settings])),
  rows,
});
console.log(`\nWritten to ${file}`);
