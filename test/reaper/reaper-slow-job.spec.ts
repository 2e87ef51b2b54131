import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useCluster } from '../support/cluster.js';

const STALE_JOB_TIMEOUT = 10;
const runs: { id: string; attempt: number; at: number }[] = [];

/** Takes `ms[attempt - 1]` (the last one repeats), or until its signal aborts. */
@JobTask('slow')
@Injectable()
class SlowTask implements JobTaskHandler<{ ms: number[] }> {
  async run(payload: { ms: number[] }, ctx: JobContext): Promise<void> {
    runs.push({ id: ctx.id, attempt: ctx.attempt, at: Date.now() });
    const ms = payload.ms[Math.min(ctx.attempt, payload.ms.length) - 1];
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, ms);
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(ctx.signal.reason);
      });
    });
  }
}

// Two instances reaping every 0.2 s, judging each other by heartbeats 1 s old at most.
const cluster = useCluster({
  options: {
    heartbeatInterval: 0.2,
    instanceTimeout: 1,
    scheduledCheck: 0.2,
    pollingCheck: 0.2,
    staleJobTimeout: STALE_JOB_TIMEOUT,
    taskTimeout: 4,
    workerTimeoutGrace: 1,
    shutdownTimeout: 1,
    workers: 1,
  },
});
const { db } = cluster;
let apps: JobsApp[];

beforeAll(async () => {
  apps = await cluster.startApps(['slow-a', 'slow-b'], { tasks: [SlowTask] });
});

it('lets a job run past instanceTimeout while its instance heartbeats', async () => {
  const { id, promise } = await apps[0].queue.addJob({
    task: 'slow',
    payload: { ms: [2_500] },
    promise: true,
  });
  await promise;
  expect(runs.filter((run) => run.id === id).map((run) => run.attempt)).toEqual([1]);
  expect(await apps[0].queue.getJob(id)).toMatchObject({
    state: 'completed',
    attempt: 1,
    lastErrorMessage: null,
  });
}, 20_000);

it('still requeues a job of a heartbeating instance once it is older than staleJobTimeout', async () => {
  const { id } = await apps[0].queue.addJob({ task: 'slow', payload: { ms: [60_000, 10] } });
  await waitFor('the first attempt to start', () => runs.some((run) => run.id === id));
  // A healthy attempt ends at its timeout, which must stay below staleJobTimeout: an attempt this
  // old is one whose instance heartbeats but is stuck, as backdating it pretends.
  await db.query(
    `UPDATE jobs."jobHistory" SET "startedAt" = now() - make_interval(secs => $2) WHERE id = $1`,
    [id, STALE_JOB_TIMEOUT],
  );
  await waitFor(
    'the job to complete on its second attempt',
    async () => (await apps[0].queue.getJob(id))?.state === 'completed',
    20_000,
  );
  expect(runs.filter((run) => run.id === id).map((run) => run.attempt)).toEqual([1, 2]);
  const job = await apps[0].queue.getJob(id);
  expect(job).toMatchObject({ attempt: 2 });
  expect(job?.lastErrorMessage).toContain('staleJobTimeout');
}, 30_000);
