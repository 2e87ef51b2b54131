import { Injectable } from '@nestjs/common';
import { JobTask, RetentionService } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const HOUR = 3600;

@JobTask({ name: 'kept.step' })
@Injectable()
class StepTask implements JobTaskHandler {
  run() {
    return { ok: true };
  }
}

let app: JobsApp;
let retention: RetentionService;

beforeAll(async () => {
  app = await startJobsApp(db.url, {
    tasks: [StepTask],
    // Retention runs only when the test asks: a round at start, then hourly.
    options: { pollingCheck: 0.2, historyExpiration: HOUR, scheduledCheck: HOUR },
  });
  retention = app.module.get(RetentionService);
});

afterAll(() => app?.close());

/** Moves the end of `ids` (and their flow's creation) `hours` into the past. */
async function endedAgo(ids: string[], hours: number) {
  await db.query(
    `UPDATE jobs."jobHistory" SET "completedAt" = now() - make_interval(hours => $2)
     WHERE id = ANY($1::uuid[])`,
    [ids, hours],
  );
  await db.query(
    `UPDATE jobs."jobFlow" f SET "createdAt" = now() - make_interval(hours => $2 + 1)
     FROM jobs."jobFlowMember" m WHERE m."flowId" = f.id AND m."jobId" = ANY($1::uuid[])`,
    [ids, hours],
  );
}

const rowsOf = async (flowId: string) =>
  (
    await db.query<{ members: number; history: number; edges: number; flows: number }>(
      `SELECT (SELECT count(*)::int FROM jobs."jobFlowMember" WHERE "flowId" = $1) AS members,
              (SELECT count(*)::int FROM jobs."jobHistory" h JOIN jobs."jobFlowMember" m
                 ON m."jobId" = h.id WHERE m."flowId" = $1) AS history,
              (SELECT count(*)::int FROM jobs."jobDependency" d JOIN jobs."jobFlowMember" m
                 ON m."jobId" = d."jobId" WHERE m."flowId" = $1) AS edges,
              (SELECT count(*)::int FROM jobs."jobFlow" WHERE id = $1) AS flows`,
      [flowId],
    )
  )[0];

it("expires a flow's rows together, after its last job, while a job of no flow expires alone", async () => {
  const flow = await app.queue.addFlow({
    jobs: [
      { ref: 'a', task: 'kept.step' },
      { ref: 'b', task: 'kept.step', dependsOn: ['a'] },
      { ref: 'c', task: 'kept.step', dependsOn: ['b'] },
    ],
  });
  const single = await app.queue.addJob({ task: 'kept.step' });
  await app.queue.waitForJob(flow.jobs.c, { timeout: 30 });
  await app.queue.waitForJob(single.id, { timeout: 30 });

  // a and b expired, c (the last to end) did not: the flow stays whole; the single job goes.
  await endedAgo([flow.jobs.a, flow.jobs.b, single.id], 2);
  await retention.pruneExpiredHistory({ lease: false });
  expect(await db.historyOf(single.id)).toBeUndefined();
  expect(await rowsOf(flow.flowId)).toEqual({ members: 3, history: 3, edges: 2, flows: 1 });
  expect((await app.queue.getFlow(flow.flowId))?.jobs.map((job) => job.state)).toEqual([
    'completed',
    'completed',
    'completed',
  ]);

  // Its last job expired too: every row of the flow goes in one round.
  await endedAgo([flow.jobs.c], 2);
  await retention.pruneExpiredHistory({ lease: false });
  expect(await rowsOf(flow.flowId)).toEqual({ members: 0, history: 0, edges: 0, flows: 0 });
  expect(await app.queue.getFlow(flow.flowId)).toBeNull();
});

it('keeps a flow while one of its jobs is still blocked or queued, however old the rest', async () => {
  const flow = await app.queue.addFlow({
    jobs: [
      { ref: 'a', task: 'kept.step' },
      { ref: 'later', task: 'kept.step', waitUntil: new Date(Date.now() + 2 * HOUR * 1000) },
      { ref: 'sink', task: 'kept.step', dependsOn: ['a', 'later'] },
    ],
  });
  await waitFor(
    'a to complete',
    async () => (await db.historyOf(flow.jobs.a))?.state === 'completed',
  );
  await endedAgo([flow.jobs.a], 5);
  await retention.pruneExpiredHistory({ lease: false });
  expect(await rowsOf(flow.flowId)).toEqual({ members: 3, history: 1, edges: 2, flows: 1 });
  expect((await app.queue.getJob(flow.jobs.sink))?.state).toBe('blocked');
  await app.queue.cancelFlow(flow.flowId);
});
