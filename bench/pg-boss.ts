/**
 * The drain and latency workloads through pg-boss (a dev dependency, for `npm run bench:peers`
 * only; it needs Node 22.12+), set up as its documentation offers for fast wake-ups and big batches,
 * and under the steady load of `bench/steady-load.ts`.
 */
import { PgBoss } from 'pg-boss';
import type { WorkOptions } from 'pg-boss';
import { trackPeakRss } from './stats.js';
import { drainSpanOnDatabaseClock, inBatches, spacedLatencies } from './workloads.js';
import type { SteadyConsumer, TimedPayload } from './steady-load.js';
import type { DrainAndLatency } from './workloads.js';

const QUEUE = 'noop';

/**
 * A worker that fetches as many jobs as it runs at once and completes them in one statement, and
 * fetches again at once while its fetches come back full (without `burstWhenBatchFull` it would
 * wait out its polling interval between two batches of a backlog).
 */
const workOptions = (concurrency: number): WorkOptions => ({
  batchSize: concurrency,
  burstWhenBatchFull: true,
});

export const PG_BOSS_SETTINGS =
  '`new PgBoss({ useListenNotify: true })`, the queue made with `notify: true` (both are needed for a NOTIFY to wake a worker), one `work()` with `batchSize` = c and `burstWhenBatchFull: true`; pool (10 connections), polling and maintenance at their defaults';

/** Runs `fn` with `instances` started pg-boss instances, each listening for its queues' notifications. */
async function withBosses<T>(
  url: string,
  instances: number,
  fn: (bosses: PgBoss[]) => Promise<T>,
): Promise<T> {
  const bosses: PgBoss[] = [];
  try {
    for (let i = 0; i < instances; i++) {
      const boss = new PgBoss({ connectionString: url, useListenNotify: true });
      boss.on('error', (error) => console.error('pg-boss:', error));
      bosses.push(await boss.start());
    }
    await bosses[0].createQueue(QUEUE, { notify: true });
    return await fn(bosses);
  } finally {
    await Promise.all(bosses.map((boss) => boss.stop()));
  }
}

export const pgBoss: DrainAndLatency = {
  async drain(url, concurrency, instances, jobs, backlogQueued) {
    await withBosses(url, 1, ([boss]) =>
      inBatches(
        (size) =>
          boss.insert(
            QUEUE,
            Array.from({ length: size }, () => ({ data: {} })),
          ),
        jobs,
      ),
    );
    await backlogQueued?.();
    const peak = trackPeakRss();
    return withBosses(url, instances, async (bosses) => {
      for (const boss of bosses) {
        await boss.work(QUEUE, workOptions(concurrency), async (jobs) => {
          await Promise.all(jobs.map(async () => undefined));
        });
      }
      // pg-boss keeps completed jobs with their times, so, as for the library: first claim to last
      // completion on the database's clock.
      const ms = await drainSpanOnDatabaseClock(
        url,
        `SELECT count(*)::int AS n FROM pgboss.job WHERE name = '${QUEUE}' AND state = 'completed'`,
        `SELECT extract(epoch FROM max(completed_on) - min(started_on)) * 1000 AS ms FROM pgboss.job WHERE name = '${QUEUE}'`,
        { jobs },
      );
      return { ms, peakRssMiB: peak() };
    });
  },

  latency(url) {
    return withBosses(url, 1, async ([boss]) => {
      const startedAt = new Map<string, number>();
      await boss.work(QUEUE, workOptions(10), async (jobs) => {
        const now = performance.now();
        for (const job of jobs) startedAt.set(job.id, now);
      });
      return spacedLatencies(async () => {
        const id = await boss.send(QUEUE, {});
        if (id === null) throw new Error('bench: pg-boss refused a job');
        return id;
      }, startedAt);
    });
  },
};

/** The steady load of `bench:horizon` through pg-boss: one `work()`, and `insert` to enqueue. */
export const pgBossSteady: SteadyConsumer = {
  schema: 'pgboss',
  withConsumer: (url, concurrency, started, load) =>
    withBosses(url, 1, async ([boss]) => {
      await boss.work(QUEUE, workOptions(concurrency), async (jobs) => {
        for (const job of jobs) started(job.data as TimedPayload);
      });
      return load(async (jobs, payload) => {
        await boss.insert(
          QUEUE,
          Array.from({ length: jobs }, () => ({ data: payload })),
        );
      });
    }),
};
