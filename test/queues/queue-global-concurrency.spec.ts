import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { sampleMax } from '../support/active-sampler.js';
import { useCluster } from '../support/cluster.js';
import { waitFor } from '../support/jobs-app.js';

const GLOBAL_CONCURRENCY = 4;
const JOBS = 200;

// Each instance alone could run 6 at once: three of them, 18. Only the queue's limit holds them to 4.
const cluster = useCluster({
  options: {
    concurrency: 6,
    pollingCheck: 0.2,
    queues: { limited: { globalConcurrency: GLOBAL_CONCURRENCY } },
  },
});

/** The handlers' own view, across the three instances of this process. */
let running = 0;
let mostAtOnce = 0;
const runs = new Map<string, number>();

@JobTask({ name: 'limitedWork', queue: 'limited' })
@Injectable()
class LimitedWork implements JobTaskHandler<{ ms: number }> {
  async run(payload: { ms: number }, ctx: JobContext): Promise<void> {
    runs.set(ctx.id, (runs.get(ctx.id) ?? 0) + 1);
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    try {
      await new Promise((resolve) => setTimeout(resolve, payload.ms));
    } finally {
      running--;
    }
  }
}

it('never has more than globalConcurrency jobs of the queue active across three instances, and runs each once', async () => {
  const [first] = await cluster.startApps(['a', 'b', 'c'], { tasks: [LimitedWork] });
  const sampler = await sampleMax(
    cluster.db.url,
    `SELECT count(*)::int AS n FROM jobs."jobHistory" WHERE state = 'active' AND queue = 'limited'`,
  );
  const added = await first.queue.addJobs(
    Array.from({ length: JOBS }, (_, i) => ({
      task: 'limitedWork',
      payload: { ms: 20 + (i % 31) },
    })),
  );
  await waitFor(
    `${JOBS} completed jobs`,
    async () => (await cluster.states()).completed === JOBS,
    60_000,
  );
  const sampled = await sampler.stop();

  expect(sampled.samples).toBeGreaterThan(50);
  expect(sampled.max).toBeLessThanOrEqual(GLOBAL_CONCURRENCY);
  expect(mostAtOnce).toBeLessThanOrEqual(GLOBAL_CONCURRENCY);
  // The limit was used, not merely respected by running one job at a time.
  expect(mostAtOnce).toBeGreaterThan(1);
  expect([...runs.keys()].sort()).toEqual(added.map((job) => job.id).sort());
  expect([...runs.values()].every((n) => n === 1)).toBe(true);
});
