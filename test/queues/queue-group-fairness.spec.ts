import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { sampleMax } from '../support/active-sampler.js';
import { useCluster } from '../support/cluster.js';
import { waitFor } from '../support/jobs-app.js';

const GROUP_CONCURRENCY = 2;

const cluster = useCluster({
  options: {
    concurrency: 8,
    pollingCheck: 0.5,
    queues: { tenants: { groupConcurrency: GROUP_CONCURRENCY } },
  },
});

/** Start order and the handlers' own count of running jobs per group, across both instances. */
const started: string[] = [];
const running = new Map<string, number>();
let mostOfOneGroup = 0;

@JobTask({ name: 'tenantWork', queue: 'tenants' })
@Injectable()
class TenantWork implements JobTaskHandler<{ group: string }> {
  async run({ group }: { group: string }, _ctx: JobContext): Promise<void> {
    started.push(group);
    running.set(group, (running.get(group) ?? 0) + 1);
    mostOfOneGroup = Math.max(mostOfOneGroup, running.get(group)!);
    try {
      await new Promise((resolve) => setTimeout(resolve, 5));
    } finally {
      running.set(group, running.get(group)! - 1);
    }
  }
}

it("starts a small group's jobs long before a large group queued ahead of it drains, and never runs more than groupConcurrency of one group", async () => {
  const enqueuer = await cluster.startEnqueuer('enqueuer');
  const add = (group: string, n: number) =>
    enqueuer.queue.addJobs(
      Array.from({ length: n }, () => ({
        task: 'tenantWork',
        groupKey: group,
        payload: { group },
      })),
    );
  // Queued before any instance runs: the whole backlog of A is ahead of B in claim order.
  await add('A', 1000);
  await add('B', 10);
  const sampler = await sampleMax(
    cluster.db.url,
    `SELECT coalesce(max(n), 0)::int AS n FROM (
       SELECT count(*) AS n FROM jobs."jobHistory"
       WHERE state = 'active' AND queue = 'tenants' GROUP BY "groupKey") g`,
  );
  await cluster.startApps(['a', 'b'], { tasks: [TenantWork] });

  await waitFor(
    'the 10 jobs of group B to start',
    () => started.filter((g) => g === 'B').length === 10,
    30_000,
  );
  // Where B's last job started, in the order of all starts: a queue served first in, first out
  // would start it after all 1000 of A.
  const lastOfB = started.lastIndexOf('B');
  expect(started.slice(0, lastOfB).filter((g) => g === 'A').length).toBeLessThan(200);

  await waitFor(
    'the 1010 jobs to complete',
    async () => (await cluster.states()).completed === 1010,
    120_000,
  );
  const sampled = await sampler.stop();
  expect(sampled.max).toBeLessThanOrEqual(GROUP_CONCURRENCY);
  expect(mostOfOneGroup).toBeLessThanOrEqual(GROUP_CONCURRENCY);
  expect(mostOfOneGroup).toBe(GROUP_CONCURRENCY);
  expect(started).toHaveLength(1010);
});
