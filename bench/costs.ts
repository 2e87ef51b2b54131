/**
 * `npm run bench:costs`: what each job costs the database, counted rather than timed (statements,
 * rows written by table, WAL bytes: `bench/db-costs.ts` says how each is read), for the library,
 * the baseline and the floor, and for graphile-worker and pg-boss where this Node runs them
 * (22.18+; `npm run bench:peers` prints the same table), in the workloads the hot path is judged
 * by: the enqueue in batches of `BATCH_SIZE` and the drain of those jobs at concurrency 50 (one
 * instance), counted apart (`bench/job-costs.ts`), and for the library and the plain queues the
 * enqueue one by one. Each workload runs twice on fresh databases, with `JOBS` jobs and with none;
 * the difference over `JOBS` is the cost per job. The counts barely move between runs (a drain's
 * batches depend a little on timing): one run is enough.
 */
import 'reflect-metadata';
import { baseline, floor } from './baseline.js';
import type { Costs } from './db-costs.js';
import { openBenchServer, writeResults } from './harness.js';
import { DRAIN, ENQUEUE, costsPerJob, describeCosts, enqueueAndDrainCosts } from './job-costs.js';
import { drainStepped, library } from './library.js';
import { loadPeers } from './peer-sides.js';
import { JOBS, STEPPED_DRAIN } from './workloads.js';
import type { DrainAndLatency, QueueUnderTest } from './workloads.js';

const ONE_BY_ONE = 'enqueue one by one';

const loaded = await loadPeers();
const sides: readonly (readonly [string, DrainAndLatency | QueueUnderTest])[] = [
  ['nestjs-pg-jobs', library],
  ['baseline', baseline],
  ['floor', floor],
  ...('peers' in loaded ? loaded.peers.map((peer) => [peer.name, peer.queue] as const) : []),
];

const server = await openBenchServer();
const costs: Record<string, Record<string, Costs>> = {
  [ENQUEUE]: {},
  [DRAIN]: {},
  [ONE_BY_ONE]: {},
};
for (const [name, side] of sides) {
  for (const [workload, perJob] of Object.entries(await enqueueAndDrainCosts(server, side, JOBS))) {
    costs[workload][name] = perJob;
  }
  if ('enqueueOneByOne' in side) {
    [costs[ONE_BY_ONE][name]] = await costsPerJob(
      server,
      (url, jobs) => side.enqueueOneByOne(url, jobs),
      JOBS,
    );
  }
  console.error(`${name} counted`);
}
// Durable steps, the library's alone: its drain of a task taking STEPS_PER_JOB steps.
costs[STEPPED_DRAIN] = {
  'nestjs-pg-jobs': (
    await costsPerJob(server, (url, jobs, mark) => drainStepped(url, jobs, mark), JOBS)
  )[1],
};
await server.stop();

console.log(
  `\nPer job: a run of ${JOBS} jobs less a run of none, over ${JOBS}; PostgreSQL from ${server.source}, Node ${process.version}.` +
    ('skipped' in loaded ? ` graphile-worker and pg-boss not run: ${loaded.skipped}.` : ''),
);
console.log(
  describeCosts(
    costs,
    sides.map(([name]) => name),
  ),
);

const file = writeResults('costs', { jobs: JOBS, node: process.version, perJob: costs });
console.log(`\nWritten to ${file}`);
