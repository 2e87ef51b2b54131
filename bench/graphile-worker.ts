/**
 * The drain and latency workloads through graphile-worker (a dev dependency, for
 * `npm run bench:peers` only; it needs Node 22.18+), as its documentation says to run fast jobs, and
 * under the steady load of `bench/steady-load.ts`.
 */
import pg from 'pg';
import { Logger, makeWorkerUtils, run } from 'graphile-worker';
import type { Runner, RunnerOptions, Task } from 'graphile-worker';
import { pollUntil, trackPeakRss } from './stats.js';
import { JOBS, inBatches, spacedLatencies, watchingClients } from './workloads.js';
import type { SteadyConsumer, TimedPayload } from './steady-load.js';
import type { DrainAndLatency } from './workloads.js';

const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error') console.error(`graphile-worker: ${message}`);
});

/**
 * Its batching, per https://worker.graphile.org/docs/performance#batching: the pool fetches (and
 * locks) as many jobs as it runs at once, and the completions of one event-loop tick are one
 * statement. Everything else at its defaults: a pool of 10 connections, `LISTEN/NOTIFY` (always on)
 * with a 2 s poll behind it.
 */
function runnerOptions(url: string, concurrency: number, noop: Task): RunnerOptions {
  return {
    connectionString: url,
    concurrency,
    taskList: { noop },
    noHandleSignals: true,
    logger: quietLogger,
    preset: { worker: { localQueue: { size: concurrency }, completeJobBatchDelay: 0 } },
  };
}

export const GRAPHILE_WORKER_SETTINGS =
  '`concurrency` c, `preset.worker.localQueue.size` = c, `completeJobBatchDelay: 0`; pool (10 connections) and `pollInterval` (2 s) at their defaults, `LISTEN/NOTIFY` always on';

async function withRunners<T>(
  url: string,
  concurrency: number,
  instances: number,
  noop: Task,
  fn: (runners: Runner[]) => Promise<T>,
): Promise<T> {
  const runners: Runner[] = [];
  try {
    for (let i = 0; i < instances; i++) {
      runners.push(await run(runnerOptions(url, concurrency, noop)));
    }
    return await fn(runners);
  } finally {
    await Promise.all(runners.map((runner) => runner.stop()));
  }
}

export const graphileWorker: DrainAndLatency = {
  async drain(url, concurrency, instances, jobs = JOBS, backlogQueued) {
    const utils = await makeWorkerUtils({ connectionString: url, logger: quietLogger });
    try {
      await utils.migrate();
      await inBatches(
        (size) =>
          utils.addJobs(Array.from({ length: size }, () => ({ identifier: 'noop', payload: {} }))),
        jobs,
      );
    } finally {
      await utils.release();
    }
    await backlogQueued?.();
    // A completed job is deleted and leaves no timestamp behind, so the drain is timed on the
    // process's clock: from the first task's start until the table is empty, which is polled only
    // once every task has started (so the polling takes no CPU from the drain itself).
    const client = new pg.Client({ connectionString: url });
    watchingClients.add(client);
    await client.connect();
    let started = 0;
    let firstStartedAt = 0;
    const noop: Task = () => {
      if (started++ === 0) firstStartedAt = performance.now();
    };
    const peak = trackPeakRss();
    try {
      return await withRunners(url, concurrency, instances, noop, async () => {
        const left = `SELECT count(*)::int AS n FROM graphile_worker._private_jobs`;
        await pollUntil(
          async () => started === jobs && (await client.query(left)).rows[0].n === 0,
          600_000,
          'the graphile-worker drain',
          1,
        );
        return { ms: performance.now() - firstStartedAt, peakRssMiB: peak() };
      });
    } finally {
      await client.end();
    }
  },

  latency(url) {
    const startedAt = new Map<string, number>();
    const record: Task = (_payload, helpers) => {
      startedAt.set(helpers.job.id, performance.now());
    };
    return withRunners(url, 10, 1, record, ([runner]) =>
      spacedLatencies(async () => (await runner.addJob('noop', {})).id, startedAt),
    );
  },
};

/** The steady load of `bench:horizon` through graphile-worker: its runner, and `addJobs` to enqueue. */
export const graphileWorkerSteady: SteadyConsumer = {
  schema: 'graphile_worker',
  async withConsumer(url, concurrency, started, load) {
    const utils = await makeWorkerUtils({ connectionString: url, logger: quietLogger });
    try {
      await utils.migrate();
      const timed: Task = (payload) => {
        started(payload as TimedPayload);
      };
      return await withRunners(url, concurrency, 1, timed, () =>
        load(async (jobs, payload) => {
          await utils.addJobs(
            Array.from({ length: jobs }, () => ({ identifier: 'noop', payload })),
          );
        }),
      );
    } finally {
      await utils.release();
    }
  },
};
