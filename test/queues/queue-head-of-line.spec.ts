import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { useCluster } from '../support/cluster.js';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';

// One start an hour: once it has started one job, the throttled queue is at its limit for the
// rest of the test. Polls every 30 s: the other queue's jobs start on their notifications.
const cluster = useCluster({
  options: {
    concurrency: 4,
    pollingCheck: 30,
    queues: { throttled: { rateLimit: { limit: 1, periodSeconds: 3600 } } },
  },
});

@JobTask({ name: 'throttledWork', queue: 'throttled' })
@Injectable()
class ThrottledWork implements JobTaskHandler {
  run(): void {}
}

@JobTask('otherWork')
@Injectable()
class OtherWork implements JobTaskHandler {
  run(): void {}
}

/** Enqueue-to-start latencies (database clock) of `n` jobs of the default queue, one at a time. */
async function latencies(app: JobsApp, n: number): Promise<number[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const { id, promise } = await app.queue.addJob({ task: 'otherWork', promise: true });
    await promise;
    ids.push(id);
  }
  const rows = await cluster.db.query<{ ms: number }>(
    `SELECT extract(epoch FROM "startedAt" - "createdAt") * 1000 AS ms
     FROM jobs."jobHistory" WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  return rows.map((row) => Number(row.ms)).sort((x, y) => x - y);
}
const median = (sorted: number[]) => sorted[Math.floor(sorted.length / 2)];

it("does not hold another queue's jobs behind a queue at its rate limit with 10,000 due jobs", async () => {
  const [a] = await cluster.startApps(['a', 'b'], { tasks: [ThrottledWork, OtherWork] });
  const usual = await latencies(a, 20);

  for (let batch = 0; batch < 10; batch++) {
    await a.queue.addJobs(Array.from({ length: 1000 }, () => ({ task: 'throttledWork' })));
  }
  await waitFor(
    'the throttled queue to start its one job of the hour',
    async () => (await cluster.states()).completed === 21,
  );
  const [{ due }] = await cluster.db.query<{ due: number }>(
    `SELECT count(*)::int AS due FROM jobs.jobs WHERE queue = 'throttled' AND "waitUntil" <= now()`,
  );
  expect(due).toBe(9999);

  const behindBacklog = await latencies(a, 20);
  // Held behind the throttled queue, a job would wait for its window: an hour.
  expect(behindBacklog.at(-1)).toBeLessThan(1000);
  expect(median(behindBacklog) - median(usual)).toBeLessThanOrEqual(Math.max(median(usual), 50));
  // The throttled queue stayed within its limit meanwhile.
  expect((await cluster.states()).completed).toBe(41);
});
