import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobDependencies, JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

/** The most jobs one addFlow takes: every one but the sink is one of its dependencies. */
const JOBS = 10_000;

const db = useTestDatabase();
/** What the sink saw of its dependencies. */
let sinkSaw: JobDependencies | undefined;

@JobTask('large.item')
@Injectable()
class ItemTask implements JobTaskHandler<{ n: number }, number> {
  run({ n }: { n: number }) {
    return n;
  }
}

@JobTask('large.sink')
@Injectable()
class SinkTask implements JobTaskHandler<unknown, number> {
  async run(_payload: unknown, ctx: JobContext) {
    sinkSaw = await ctx.dependencies();
    return Object.values(sinkSaw).reduce((total, dep) => total + (dep.result as number), 0);
  }
}

let app: JobsApp;

beforeAll(async () => {
  app = await startJobsApp(db.url, {
    tasks: [ItemTask, SinkTask],
    options: { pollingCheck: 0.5, concurrency: 50 },
  });
});

afterAll(() => app?.close());

it('adds a flow of 10,000 jobs in one call and drains it, the sink reading its 9,999 dependencies', async () => {
  const items = Array.from({ length: JOBS - 1 }, (_, n) => ({
    ref: `item-${n}`,
    task: 'large.item',
    payload: { n },
  }));
  // In one call, bounded by the test's timeout alone: no figure of time is asserted.
  const flow = await app.queue.addFlow({
    name: 'ten thousand',
    jobs: [...items, { ref: 'sink', task: 'large.sink', dependsOn: items.map(({ ref }) => ref) }],
  });
  expect(Object.keys(flow.jobs)).toHaveLength(JOBS);

  const sum = await app.queue.waitForJob(flow.jobs.sink, { timeout: 240 });
  expect(sum).toBe(((JOBS - 1) * (JOBS - 2)) / 2);
  expect(Object.keys(sinkSaw!)).toHaveLength(JOBS - 1);
  expect(sinkSaw!['item-42']).toEqual({ id: flow.jobs['item-42'], state: 'completed', result: 42 });

  const [counts] = await db.query<{ completed: number; queued: number }>(
    `SELECT (SELECT count(*)::int FROM jobs."jobHistory" WHERE state = 'completed') AS completed,
            (SELECT count(*)::int FROM jobs.jobs) AS queued`,
  );
  expect(counts).toEqual({ completed: JOBS, queued: 0 });
  const info = await app.queue.getFlow(flow.flowId);
  expect(info!.jobs).toHaveLength(JOBS);
  expect(info!.jobs.every((job) => job.state === 'completed')).toBe(true);
}, 300_000);
