/** The same workloads through nestjs-pg-jobs, as an app would use it. */
import { Injectable, Module } from '@nestjs/common';
import type { DynamicModule, INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { JobQueueService, JobTask, JobsModule } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler, JobsModuleOptions } from 'nestjs-pg-jobs';
import { pollUntil, trackPeakRss } from './stats.js';
import { BATCH_SIZE, JOBS, LATENCY_GAP_MS, LATENCY_JOBS } from './workloads.js';
import type { QueueUnderTest } from './workloads.js';

/** Handler-start times by job id, for the latency workload. */
const startedAt = new Map<string, number>();

@JobTask('noop')
@Injectable()
class NoopTask implements JobTaskHandler {
  run(_payload: unknown, ctx: JobContext): void {
    startedAt.set(ctx.id, performance.now());
  }
}

@Module({})
class BenchAppModule {
  static register(options: JobsModuleOptions): DynamicModule {
    return {
      module: BenchAppModule,
      imports: [JobsModule.forRoot(options)],
      providers: [NoopTask],
    };
  }
}

async function withApps<T>(
  url: string,
  options: Partial<JobsModuleOptions>,
  instances: number,
  fn: (queue: JobQueueService) => Promise<T>,
): Promise<T> {
  const apps: INestApplicationContext[] = [];
  try {
    for (let i = 0; i < instances; i++) {
      apps.push(
        await NestFactory.createApplicationContext(
          BenchAppModule.register({ connection: url, ...options }),
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

async function enqueueInBatches(queue: JobQueueService): Promise<void> {
  for (let offset = 0; offset < JOBS; offset += BATCH_SIZE) {
    const n = Math.min(BATCH_SIZE, JOBS - offset);
    await queue.addJobs(Array.from({ length: n }, () => ({ task: 'noop' })));
  }
}

/** Polls history on one connection until every job is recorded completed. */
async function waitForCompleted(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const count = `SELECT count(*)::int AS n FROM jobs."jobHistory" WHERE state = 'completed'`;
    await pollUntil(
      async () => (await client.query(count)).rows[0].n === JOBS,
      120_000,
      'the library drain',
    );
  } finally {
    await client.end();
  }
}

export const library: QueueUnderTest = {
  enqueueOneByOne: (url) =>
    withApps(url, { runJobs: false }, 1, async (queue) => {
      const start = performance.now();
      for (let i = 0; i < JOBS; i++) await queue.addJob({ task: 'noop' });
      return performance.now() - start;
    }),

  enqueueBatches: (url) =>
    withApps(url, { runJobs: false }, 1, async (queue) => {
      const start = performance.now();
      await enqueueInBatches(queue);
      return performance.now() - start;
    }),

  drain: async (url, concurrency, instances) => {
    // Queue first, with no consumer running, so the drain starts from a full queue.
    await withApps(url, { runJobs: false }, 1, enqueueInBatches);
    const peak = trackPeakRss();
    startedAt.clear();
    return withApps(url, { concurrency, pollingCheck: 0.5 }, instances, async () => {
      await waitForCompleted(url);
      // From the first handler start: booting the Nest apps is not part of the drain.
      const start = Math.min(...startedAt.values());
      return { ms: performance.now() - start, peakRssMiB: peak() };
    });
  },

  latency: (url) =>
    withApps(url, { concurrency: 10 }, 1, async (queue) => {
      const addedAt = new Map<string, number>();
      for (let i = 0; i < LATENCY_JOBS; i++) {
        const sentAt = performance.now();
        const { id } = await queue.addJob({ task: 'noop' });
        addedAt.set(id, sentAt);
        await new Promise((resolve) => setTimeout(resolve, LATENCY_GAP_MS));
      }
      await pollUntil(
        async () => [...addedAt.keys()].every((id) => startedAt.has(id)),
        30_000,
        'latency samples',
      );
      return [...addedAt].map(([id, sent]) => startedAt.get(id)! - sent);
    }),
};
