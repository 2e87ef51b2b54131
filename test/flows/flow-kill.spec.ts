import { JobCancelledError } from 'nestjs-pg-jobs';
import type { FlowStepResult } from '../fixtures/instance/fixture.module.js';
import type { InstanceProcess } from '../fixtures/instance/instance-process.js';
import { fastLiveness, useCluster } from '../support/cluster.js';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';

const INSTANCE_TIMEOUT = 1.5;
const REAPER_INTERVAL = 0.25;
const cluster = useCluster({ options: fastLiveness(INSTANCE_TIMEOUT, REAPER_INTERVAL, 4) });
let victim: InstanceProcess;
let enqueuer: JobsApp;

beforeAll(async () => {
  // Alone at first: every job that starts before the kill starts on the victim.
  victim = await cluster.startProcess('flow-victim');
  enqueuer = await cluster.startEnqueuer('flow-kill-enqueuer');
}, 90_000);

it('rescues the flow jobs of a SIGKILLed instance: each ends as documented, dependents unblock once', async () => {
  // A dependency whose interrupted attempt is retried: its dependent waits for the retry.
  const retried = await enqueuer.queue.addFlow({
    jobs: [
      { ref: 'root', task: 'flowStep', payload: { value: 1 } },
      {
        ref: 'long',
        task: 'flowStep',
        payload: { value: 10, ms: [60_000, 10] },
        dependsOn: ['root'],
        maxRetries: 1,
      },
      { ref: 'after', task: 'flowStep', dependsOn: ['root', 'long'] },
    ],
  });
  // A dependency interrupted with no retry left: it ended, without completing.
  const lost = await enqueuer.queue.addFlow({
    jobs: [
      { ref: 'doomed', task: 'flowStep', payload: { ms: 60_000 }, maxRetries: 0 },
      { ref: 'cancelled', task: 'flowStep', dependsOn: ['doomed'] },
      { ref: 'grandchild', task: 'flowStep', dependsOn: ['cancelled'] },
      { ref: 'runs', task: 'flowStep', dependsOn: ['doomed'], onDependencyFailure: 'run' },
    ],
  });
  await waitFor('both long jobs to run on the victim', async () => {
    const active = await cluster.activeJobsOf(victim.id);
    return active.includes(retried.jobs.long) && active.includes(lost.jobs.doomed);
  });
  const grandchild = enqueuer.queue.waitForJob(lost.jobs.grandchild, { timeout: 60 });
  grandchild.catch(() => undefined);

  const survivor = await cluster.startProcess('flow-survivor');
  await cluster.kill(victim);

  const after = (await enqueuer.queue.waitForJob(retried.jobs.after, {
    timeout: 60,
  })) as FlowStepResult;
  // root 1 + long (10 + root 1)
  expect(after).toEqual({ value: 12, dependencies: { root: 'completed', long: 'completed' } });
  const runs = (await enqueuer.queue.waitForJob(lost.jobs.runs, { timeout: 60 })) as FlowStepResult;
  expect(runs).toEqual({ value: 0, dependencies: { doomed: 'interrupted' } });
  await expect(grandchild).rejects.toThrow(JobCancelledError);

  expect(await enqueuer.queue.getJob(retried.jobs.long)).toMatchObject({
    state: 'completed',
    attempt: 2,
    executedBy: survivor.id,
  });
  expect(await enqueuer.queue.getJob(lost.jobs.doomed)).toMatchObject({
    state: 'interrupted',
    attempt: 1,
  });
  expect(await enqueuer.queue.getJob(lost.jobs.cancelled)).toMatchObject({
    state: 'cancelled',
    attempt: 0,
    lastErrorMessage: `Cancelled: its dependency "doomed" (${lost.jobs.doomed}) ended interrupted.`,
  });
  expect(await enqueuer.queue.getJob(lost.jobs.grandchild)).toMatchObject({
    state: 'cancelled',
    attempt: 0,
    lastErrorMessage: `Cancelled: its dependency "cancelled" (${lost.jobs.cancelled}) ended cancelled.`,
  });

  // Every job ran as often as documented: the interrupted attempt again while a retry remained,
  // every dependent once, a cancelled one never.
  const runCounts = async (flow: { jobs: Record<string, string> }) => {
    const counts = Object.fromEntries(Object.keys(flow.jobs).map((ref) => [ref, 0]));
    const refOf = new Map(Object.entries(flow.jobs).map(([ref, id]) => [id, ref]));
    for (const run of await cluster.runs(Object.values(flow.jobs))) counts[refOf.get(run.jobId)!]++;
    return counts;
  };
  expect(await runCounts(retried)).toEqual({ root: 1, long: 2, after: 1 });
  expect(await runCounts(lost)).toEqual({ doomed: 1, cancelled: 0, grandchild: 0, runs: 1 });
  const dependentRuns = await cluster.runs([retried.jobs.after, lost.jobs.runs]);
  expect(dependentRuns.map((run) => run.instance)).toEqual([survivor.id, survivor.id]);

  // Nothing is left queued, and each dependency was counted for each dependent once.
  const ids = [...Object.values(retried.jobs), ...Object.values(lost.jobs)];
  expect(await cluster.db.query('SELECT id FROM jobs.jobs WHERE id = ANY($1)', [ids])).toEqual([]);
  expect(
    await cluster.db.query(
      'SELECT count(*)::int AS n FROM jobs."jobDependency" WHERE "jobId" = ANY($1) AND NOT ended',
      [ids],
    ),
  ).toEqual([{ n: 0 }]);
}, 120_000);
