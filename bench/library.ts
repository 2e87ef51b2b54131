/** The same workloads through nestjs-pg-jobs, as an app would use it. */
import { Injectable, Module } from '@nestjs/common';
import type { DynamicModule, INestApplicationContext, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { defineTask, JobQueueService, JobTask, JobsModule } from 'nestjs-pg-jobs';
import type {
  JobContext,
  JobTaskHandler,
  JobsModuleOptions,
  QueueOptions,
  TaskPayload,
} from 'nestjs-pg-jobs';
import { z } from 'zod';
import { trackPeakRss } from './stats.js';
import {
  JOBS,
  STEPS_PER_JOB,
  drainSpanOnDatabaseClock,
  inBatches,
  spacedLatencies,
} from './workloads.js';
import type { HistoryGrowthSample } from './targets.js';
import type { QueueUnderTest } from './workloads.js';

/** Handler-start times by job id, for the latency workload. */
const startedAt = new Map<string, number>();

/** A no-op task named `name` in `queue`, recording when it started (for the latency workloads). */
function noopTask(name: string, queue?: string): Type {
  @JobTask({ name, queue })
  @Injectable()
  class NoopTask implements JobTaskHandler {
    run(_payload: unknown, ctx: JobContext): void {
      startedAt.set(ctx.id, performance.now());
    }
  }
  return NoopTask;
}

const NOOP = noopTask('noop');
/** The same no-op task in a queue of its own, named `bench`. */
const QUEUED_NOOP = noopTask('noop.queued', 'bench');
/** A no-op task with a small zod payload schema (a default to apply), parsed at every run. */
const TypedNoopDefinition = defineTask({
  name: 'noop.typed',
  payloadSchema: z.object({ n: z.number().default(0) }),
});

@JobTask(TypedNoopDefinition)
@Injectable()
class TypedNoopTask implements JobTaskHandler<typeof TypedNoopDefinition> {
  run(_payload: TaskPayload<typeof TypedNoopDefinition>, ctx: JobContext): void {
    startedAt.set(ctx.id, performance.now());
  }
}

/** A no-op task that takes `STEPS_PER_JOB` durable steps, each returning nothing. */
@JobTask('noop.stepped')
@Injectable()
class SteppedNoopTask implements JobTaskHandler {
  async run(_payload: unknown, ctx: JobContext): Promise<void> {
    for (let i = 0; i < STEPS_PER_JOB; i++) await ctx.step('step', () => undefined);
  }
}

/** One no-op task in each of ten queues, `q0` to `q9`. */
const TEN_QUEUES = Array.from({ length: 10 }, (_, i) => `q${i}`);
const TEN_QUEUE_TASKS = TEN_QUEUES.map((queue) => noopTask(`noop.${queue}`, queue));

@Module({})
class BenchAppModule {
  static register(options: JobsModuleOptions, tasks: readonly Type[]): DynamicModule {
    return {
      module: BenchAppModule,
      imports: [JobsModule.forRoot(options)],
      providers: [...tasks],
    };
  }
}

/** Boots `instances` apps of the library on `url` with `options` and `tasks`, runs `fn`, closes them. */
export async function withApps<T>(
  url: string,
  options: Partial<JobsModuleOptions>,
  instances: number,
  fn: (queue: JobQueueService) => Promise<T>,
  tasks: readonly Type[] = [NOOP],
): Promise<T> {
  const apps: INestApplicationContext[] = [];
  try {
    for (let i = 0; i < instances; i++) {
      apps.push(
        await NestFactory.createApplicationContext(
          BenchAppModule.register({ connection: url, ...options }, tasks),
          {
            logger: ['error'],
          },
        ),
      );
    }
    return await fn(apps[0].get(JobQueueService));
  } finally {
    await Promise.all(apps.map((app) => app.close()));
  }
}

function enqueueInBatches(queue: JobQueueService, task = 'noop', jobs = JOBS): Promise<void> {
  return inBatches((size) => queue.addJobs(Array.from({ length: size }, () => ({ task }))), jobs);
}

/**
 * Makes the library's schema and queues `jobs` jobs of `task` through it, with no consumer
 * running: the backlog a drain starts from.
 */
export function queueBacklog(url: string, task = 'noop', jobs = JOBS): Promise<void> {
  return withApps(url, { runJobs: false, allowUnknownTasks: true }, 1, (queue) =>
    enqueueInBatches(queue, task, jobs),
  );
}

/**
 * First claim to last completion of the `jobs` queued jobs, on the database's clock, from their
 * history rows. Only jobs that ended after `since` count (history may hold older ones: see
 * `drainOnFullHistory`), read on the index of ended jobs.
 */
function drainTime(url: string, jobs: number, since: Date): Promise<number> {
  const ended = `FROM jobs."jobHistory" WHERE state = 'completed' AND "completedAt" >= $1`;
  return drainSpanOnDatabaseClock(
    url,
    `SELECT count(*)::int AS n ${ended}`,
    `SELECT extract(epoch FROM max("completedAt") - min("startedAt")) * 1000 AS ms ${ended}`,
    { jobs, params: [since] },
  );
}

/** The database's clock. */
export async function databaseNow(url: string): Promise<Date> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query('SELECT now() AS now')).rows[0].now;
  } finally {
    await client.end();
  }
}

/**
 * Queues `jobs` jobs of `task` with no consumer running (after `prepare`, given the schema's
 * database), then drains them with `instances` apps (running `tasks`), once `backlogQueued` (if
 * any) has returned.
 */
async function drain(
  url: string,
  task: string,
  options: Partial<JobsModuleOptions>,
  instances: number,
  {
    tasks,
    jobs = JOBS,
    backlog = (url) => queueBacklog(url, task, jobs),
    prepare,
    backlogQueued,
  }: {
    tasks?: readonly Type[];
    jobs?: number;
    /** Queues the `jobs` jobs with no consumer running. Default: `jobs` jobs of `task`. */
    backlog?: (url: string) => Promise<void>;
    prepare?: (url: string) => Promise<void>;
    backlogQueued?: () => Promise<void>;
  } = {},
): Promise<{ ms: number; peakRssMiB: number }> {
  await backlog(url);
  await prepare?.(url);
  const since = await databaseNow(url);
  await backlogQueued?.();
  const peak = trackPeakRss();
  return withApps(
    url,
    { pollingCheck: 0.5, ...options },
    instances,
    async () => {
      const ms = await drainTime(url, jobs, since);
      return { ms, peakRssMiB: peak() };
    },
    tasks,
  );
}

/**
 * The drain of c=50 x1 on a history that already holds `rows` ended jobs (a day of a busy queue),
 * vacuumed and analysed as autovacuum would leave it, and on disk: what a long history costs the
 * hot path.
 */
export function drainOnFullHistory(url: string, rows: number) {
  return drain(url, 'noop', { concurrency: 50 }, 1, {
    prepare: async (url) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(
          `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt",
                                          "startedAt", "completedAt")
           SELECT gen_random_uuid(), 'earlier', 'completed', 1, 0, t, t, t
           FROM generate_series(1, $1::int) g,
                LATERAL (SELECT now() - interval '1 day' + g * interval '50 ms') AS x(t)`,
          [rows],
        );
        await client.query('VACUUM ANALYZE jobs."jobHistory"');
        // Written out, as a history that grew over a day would be: the preparation leaves all of
        // a default server's shared buffers dirty (16,000 of them, measured), which the drain
        // would otherwise have to write back itself to make room for its own pages.
        await client.query('CHECKPOINT');
      } finally {
        await client.end();
      }
    },
  });
}

/**
 * The drain of c=50 x1 of a flow of `jobs` no-op jobs (default `JOBS`) added in one call: one job,
 * then all but two after it, then one after all of them (1 → jobs − 2 → 1, as many jobs as one
 * `addFlow` takes), against the drain of as many jobs without dependencies. Also returns how long
 * after the last of its dependencies completed the sink started (history's times, the database's
 * clock): a notification's round trip when the ending that unblocks it wakes the instance, a poll
 * (`pollingCheck`, 0.5 s here) when it does not.
 */
export async function drainFlow(
  url: string,
  jobs = JOBS,
): Promise<{ ms: number; sinkDelayMs: number }> {
  let sink = '';
  const { ms } = await drain(url, 'noop', { concurrency: 50 }, 1, {
    jobs,
    backlog: (url) =>
      withApps(url, { runJobs: false }, 1, async (queue) => {
        const items = Array.from({ length: jobs - 2 }, (_, i) => `item-${i}`);
        const flow = await queue.addFlow({
          jobs: [
            { ref: 'source', task: 'noop' },
            ...items.map((ref) => ({ ref, task: 'noop', dependsOn: ['source'] })),
            { ref: 'sink', task: 'noop', dependsOn: items },
          ],
        });
        sink = flow.jobs.sink;
      }),
  });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ ms: number }>(
      `SELECT extract(epoch FROM s."startedAt" - max(h."completedAt")) * 1000 AS ms
       FROM jobs."jobHistory" s, jobs."jobHistory" h
       WHERE s.id = $1 AND h.id <> $1 GROUP BY s."startedAt"`,
      [sink],
    );
    return { ms, sinkDelayMs: Number(rows[0].ms) };
  } finally {
    await client.end();
  }
}

/**
 * The drain of c=50 x1 with its task in the queue `bench`, configured with `limits`: none (a named
 * queue that costs nothing), or limits set high enough never to bind (what the mechanism costs).
 */
export function drainQueued(url: string, limits: QueueOptions) {
  return drain(url, 'noop.queued', { concurrency: 50, queues: { bench: limits } }, 1, {
    tasks: [QUEUED_NOOP],
  });
}

/**
 * The drain of c=50 x1 of a task that takes `STEPS_PER_JOB` durable steps: what a step costs (its
 * one write, and the run's one read of the job's checkpoints), against the plain drain.
 */
export function drainStepped(url: string, jobs = JOBS, backlogQueued?: () => Promise<void>) {
  return drain(url, 'noop.stepped', { concurrency: 50 }, 1, {
    tasks: [SteppedNoopTask],
    jobs,
    backlogQueued,
  });
}

/**
 * The drain of c=50 x1 of a task with a small zod `payloadSchema`: what parsing each payload at run
 * costs (issue 27), against the plain drain. The backlog is queued unchecked, as every drain's is.
 */
export function drainTyped(url: string) {
  return drain(url, 'noop.typed', { concurrency: 50 }, 1, { tasks: [TypedNoopTask] });
}

/**
 * Enqueue-to-start latencies with ten queues active, each with a limit that never binds (so each
 * is claimed by a statement of its own): the latency jobs go round the ten queues.
 */
export function latencyTenQueues(url: string): Promise<number[]> {
  const queues = Object.fromEntries(
    TEN_QUEUES.map((queue) => [queue, { globalConcurrency: 1000 }]),
  );
  return withApps(
    url,
    { concurrency: 10, queues },
    1,
    (queue) => measureLatency(queue, (i) => `noop.${TEN_QUEUES[i % TEN_QUEUES.length]}`),
    TEN_QUEUE_TASKS,
  );
}

/** The latency workload through `queue`, the `i`th job of task `taskOf(i)`. */
function measureLatency(queue: JobQueueService, taskOf: (i: number) => string): Promise<number[]> {
  return spacedLatencies(async (i) => (await queue.addJob({ task: taskOf(i) })).id, startedAt);
}

const WORKER_MODULE = new URL('./worker-noop.module.ts', import.meta.url).href;

/** The drain of no-op worker tasks, in the pool of `workers: 'auto'` threads. */
export function drainWorkerTasks(url: string, concurrency: number) {
  return drain(url, 'bench.workerNoop', { concurrency, workerModule: WORKER_MODULE }, 1);
}

export const library: QueueUnderTest = {
  enqueueOneByOne: (url, jobs = JOBS) =>
    withApps(url, { runJobs: false }, 1, async (queue) => {
      const start = performance.now();
      for (let i = 0; i < jobs; i++) await queue.addJob({ task: 'noop' });
      return performance.now() - start;
    }),

  enqueueBatches: (url, jobs) =>
    withApps(url, { runJobs: false }, 1, async (queue) => {
      const start = performance.now();
      await enqueueInBatches(queue, 'noop', jobs);
      return performance.now() - start;
    }),

  drain: (url, concurrency, instances, jobs, backlogQueued) =>
    drain(url, 'noop', { concurrency }, instances, { jobs, backlogQueued }),

  latency: (url) =>
    withApps(url, { concurrency: 10 }, 1, (queue) => measureLatency(queue, () => 'noop')),
};

/** Jobs kept queued at least during `historyGrowth`, so the instance drains at its full rate. */
const FED_BACKLOG = 5000;

/**
 * A steady drain of no-op jobs at c=50 (the queue fed so that it never runs dry) for `seconds`,
 * with `options` (a short `historyExpiration`), looking at history once a second: whether pruning
 * keeps it flat at the rate jobs end.
 */
export function historyGrowth(
  url: string,
  seconds: number,
  options: Partial<JobsModuleOptions>,
): Promise<HistoryGrowthSample[]> {
  return withApps(url, { concurrency: 50, ...options }, 1, async (queue) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const queued = async () =>
      Number((await client.query('SELECT count(*)::int AS n FROM jobs.jobs')).rows[0].n);
    const samples: HistoryGrowthSample[] = [];
    /** The latest count of each partition: a dropped one keeps its last. */
    const deletedByPartition = new Map<string, number>();
    let enqueued = 0;
    try {
      const start = performance.now();
      let nextSample = 1;
      while (performance.now() - start < seconds * 1000) {
        const depth = await queued();
        if (depth < FED_BACKLOG) {
          await enqueueInBatches(queue, 'noop', FED_BACKLOG);
          enqueued += FED_BACKLOG;
        }
        const elapsed = (performance.now() - start) / 1000;
        if (elapsed >= nextSample) {
          const [{ n }] = (await client.query('SELECT count(*)::int AS n FROM jobs."jobHistory"'))
            .rows;
          for (const row of (
            await client.query<{ name: string; deleted: string }>(
              `SELECT relname AS name, n_tup_del AS deleted FROM pg_stat_user_tables
               WHERE schemaname = 'jobs' AND relname LIKE 'jobHistory%'`,
            )
          ).rows) {
            deletedByPartition.set(row.name, Number(row.deleted));
          }
          samples.push({
            seconds: elapsed,
            historyRows: n,
            processed: enqueued - (await queued()),
            deletedRows: [...deletedByPartition.values()].reduce((sum, d) => sum + d, 0),
          });
          nextSample++;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return samples;
    } finally {
      await client.end();
    }
  });
}
