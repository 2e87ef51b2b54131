/**
 * `npm run bench`: every workload for the library and for two plain-pg queues (the baseline, and
 * the floor: the least a Postgres queue can do), in one process run on one database server, each
 * figure the median of REPETITIONS runs (with min and max), and each library figure next to its
 * ratio to both. Prints a table and writes the same as JSON to bench/results/.
 */
import 'reflect-metadata';
import { baseline, floor } from './baseline.js';
import {
  formatFigure,
  openBenchServer,
  perSecond,
  recordDrain,
  recordLatency,
  unitOf,
  writeResults,
} from './harness.js';
import type { Sample } from './harness.js';
import {
  drainFlow,
  drainOnFullHistory,
  drainQueued,
  drainStepped,
  drainTyped,
  drainWorkerTasks,
  latencyTenQueues,
  library,
} from './library.js';
import { latency, summarise } from './stats.js';
import { checkTargets, describeCheck } from './targets.js';
import type { Figure } from './stats.js';
import {
  FLOW_DRAIN,
  FLOW_SINK_LATENCY,
  HISTORY_ROWS,
  JOBS,
  LATENCY_JOBS,
  QUEUE_SIZES,
  REPETITIONS,
  STEPPED_DRAIN,
} from './workloads.js';
import type { QueueUnderTest } from './workloads.js';
import type { QueueOptions } from 'nestjs-pg-jobs';

interface Row {
  workload: string;
  unit: string;
  /** Higher is better for throughput, lower for latency and memory. */
  better: 'higher' | 'lower';
  library: Figure;
  baseline: Figure;
  floor: Figure;
}

const server = await openBenchServer();
const { onFreshDatabase } = server;

/**
 * The drain of c=50 x1 with its task in a named queue: with no limits (it must cost nothing), and
 * with each cluster-wide limit set too high to bind (what serialising the queue's claims costs).
 */
const QUEUE_DRAINS: readonly (readonly [string, QueueOptions])[] = [
  ['drain c=50 x1, named queue, no limits', {}],
  ['drain c=50 x1, globalConcurrency 10^6', { globalConcurrency: 1_000_000 }],
  ['drain c=50 x1, rateLimit 10^6/s', { rateLimit: { limit: 1_000_000, periodSeconds: 1 } }],
];

/** One repetition of every workload for one side, as named figures. */
async function measure(side: QueueUnderTest): Promise<Sample> {
  const sample: Sample = {};
  sample['enqueue one by one'] = perSecond(await onFreshDatabase(side.enqueueOneByOne));
  sample['enqueue in batches'] = perSecond(await onFreshDatabase(side.enqueueBatches));
  await recordDrain(sample, server, side, 10, 1);
  await recordDrain(sample, server, side, 50, 1);
  // Right after the drain it is judged against: the figures of one repetition drift with the
  // server's state (its WAL, its dirty buffers) as the workloads go by.
  if (HISTORY_ROWS > 0) {
    sample[`drain c=50 x1, ${HISTORY_ROWS} history rows`] =
      side === library
        ? perSecond((await onFreshDatabase((url) => drainOnFullHistory(url, HISTORY_ROWS))).ms)
        : sample['drain c=50 x1'];
  }
  await recordDrain(sample, server, side, 50, 2);
  for (const size of QUEUE_SIZES) {
    const run = await onFreshDatabase((url) => side.drain(url, 50, 1, size));
    sample[`drain c=50 x1, ${size} queued`] = (size / run.ms) * 1000;
  }
  // Workloads of the library alone: the plain queues' figure is their plain drain at the same
  // concurrency (they have no worker threads and no history).
  sample['drain worker tasks c=10 x1'] =
    side === library
      ? perSecond((await onFreshDatabase((url) => drainWorkerTasks(url, 10))).ms)
      : sample['drain c=10 x1'];
  // A typed task's drain (the plain queues have no schemas: their figure is their plain drain).
  sample['drain c=50 x1, zod payloadSchema'] =
    side === library ? perSecond((await onFreshDatabase(drainTyped)).ms) : sample['drain c=50 x1'];
  // Durable steps (the plain queues have none: their figure is their plain drain).
  sample[STEPPED_DRAIN] =
    side === library
      ? perSecond((await onFreshDatabase((url) => drainStepped(url))).ms)
      : sample['drain c=50 x1'];
  // A flow's drain, judged against the drain of as many jobs without dependencies (the plain queues
  // have no flows: their figures are that drain, and their latency p50 for the sink's start).
  const flow = side === library ? await onFreshDatabase((url) => drainFlow(url)) : undefined;
  sample[FLOW_DRAIN] = flow ? perSecond(flow.ms) : sample['drain c=50 x1'];
  const lat = await recordLatency(sample, server, side);
  sample[FLOW_SINK_LATENCY] = flow ? flow.sinkDelayMs : lat.p50;
  // Named queues (the baseline has none: its figures are its plain drain and latency, as above).
  for (const [name, limits] of QUEUE_DRAINS) {
    sample[name] =
      side === library
        ? perSecond((await onFreshDatabase((url) => drainQueued(url, limits))).ms)
        : sample['drain c=50 x1'];
  }
  const tenQueues = side === library ? latency(await onFreshDatabase(latencyTenQueues)) : lat;
  sample['latency p50, 10 limited queues'] = tenQueues.p50;
  sample['latency p95, 10 limited queues'] = tenQueues.p95;
  return sample;
}

const samples = { library: [] as Sample[], baseline: [] as Sample[], floor: [] as Sample[] };
for (let i = 0; i < REPETITIONS; i++) {
  // Interleaved, so that drift in the machine's load hits every side alike.
  samples.floor.push(await measure(floor));
  samples.baseline.push(await measure(baseline));
  samples.library.push(await measure(library));
  console.error(`repetition ${i + 1}/${REPETITIONS} done`);
}
await server.stop();

const rows: Row[] = Object.keys(samples.library[0]).map((workload) => ({
  workload,
  ...unitOf(workload),
  library: summarise(samples.library.map((s) => s[workload])),
  baseline: summarise(samples.baseline.map((s) => s[workload])),
  floor: summarise(samples.floor.map((s) => s[workload])),
}));

const ratio = (a: Figure, b: Figure) => (a.median / b.median).toFixed(2);
const lines = [
  `| workload | unit | nestjs-pg-jobs median (min–max) | baseline | floor | ÷ baseline | ÷ floor |`,
  `| --- | --- | --- | --- | --- | --- | --- |`,
  ...rows.map(
    (r) =>
      `| ${r.workload} | ${r.unit} | ${formatFigure(r.library)} | ${formatFigure(r.baseline)} | ${formatFigure(r.floor)} | ${ratio(r.library, r.baseline)} | ${ratio(r.library, r.floor)} |`,
  ),
];
console.log(
  `\n${JOBS} jobs per throughput workload, ${LATENCY_JOBS} for latency, ${REPETITIONS} repetitions, PostgreSQL from ${server.source}.\n`,
);
console.log(lines.join('\n'));

// A queue's cost is its drain against the library's own plain drain, not against the baseline.
const libraryMedian = (workload: string) =>
  rows.find((row) => row.workload === workload)!.library.median;
console.log(
  `\nNamed queues, flows and durable steps, against the library's own figure without them:\n${[
    ...QUEUE_DRAINS.map(([name]) => [name, 'drain c=50 x1'] as const),
    ['latency p50, 10 limited queues', 'latency p50'] as const,
    [FLOW_DRAIN, 'drain c=50 x1'] as const,
    [FLOW_SINK_LATENCY, 'latency p50'] as const,
    [STEPPED_DRAIN, 'drain c=50 x1'] as const,
  ]
    .map(
      ([workload, plain]) =>
        `- ${workload}: ${(libraryMedian(workload) / libraryMedian(plain)).toFixed(2)} × ${plain}`,
    )
    .join('\n')}`,
);

const checks = checkTargets((workload) => {
  const row = rows.find((candidate) => candidate.workload === workload);
  if (!row) throw new Error(`bench: a target names the workload "${workload}", which did not run`);
  return row;
});
console.log(`\nTargets:\n${checks.map(describeCheck).join('\n')}`);

const file = writeResults('bench', {
  jobs: JOBS,
  repetitions: REPETITIONS,
  rows,
  targets: checks.map(({ target, value, met }) => ({
    workload: target.workload,
    against: target.against,
    threshold: target.threshold,
    value,
    met,
  })),
});
console.log(`\nWritten to ${file}`);
