import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { useCluster } from '../support/cluster.js';
import { waitFor } from '../support/jobs-app.js';

const LIMIT = 10;
const PERIOD_MS = 1000;
const JOBS = 60;

// Three instances of 8 could start all 60 jobs in a few rounds: only the rate limit spaces them.
const cluster = useCluster({
  options: {
    concurrency: 8,
    pollingCheck: 2,
    queues: { throttled: { rateLimit: { limit: LIMIT, periodSeconds: PERIOD_MS / 1000 } } },
  },
});

@JobTask({ name: 'throttledWork', queue: 'throttled' })
@Injectable()
class ThrottledWork implements JobTaskHandler {
  run(): void {}
}

it('starts at most `limit` jobs of the queue in any window of `periodSeconds` across three instances, and no fewer than it allows', async () => {
  const [first] = await cluster.startApps(['a', 'b', 'c'], { tasks: [ThrottledWork] });
  await first.queue.addJobs(Array.from({ length: JOBS }, () => ({ task: 'throttledWork' })));
  await waitFor(
    `${JOBS} completed jobs`,
    async () => (await cluster.states()).completed === JOBS,
    30_000,
  );
  // History's start times are the database's clock, the one the limit is judged on.
  const starts = (
    await cluster.db.query<{ ms: number }>(
      `SELECT extract(epoch FROM "startedAt") * 1000 AS ms FROM jobs."jobHistory" ORDER BY 1`,
    )
  ).map((row) => Number(row.ms));
  expect(starts).toHaveLength(JOBS);

  // Every sliding window [t, t + period) starting at a start time holds at most `limit` starts.
  const busiest = Math.max(
    ...starts.map((t) => starts.filter((s) => s >= t && s < t + PERIOD_MS).length),
  );
  expect(busiest).toBeLessThanOrEqual(LIMIT);

  // 60 starts at 10 a second take 5 s at least (the first 10 at once, the last 10 five windows
  // later); a runner that waited for its poll (2 s) or threw windows away would take far longer.
  const span = starts[starts.length - 1] - starts[0];
  expect(span).toBeGreaterThanOrEqual(((JOBS - LIMIT) / LIMIT) * PERIOD_MS);
  expect(span).toBeLessThan(8 * PERIOD_MS);
});
