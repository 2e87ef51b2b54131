import { JobsAdminModule, JobsAdminService } from 'nestjs-pg-jobs';
import type { InstanceProcess } from '../fixtures/instance/instance-process.js';
import { fastLiveness, useCluster } from '../support/cluster.js';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';

const cluster = useCluster({ options: fastLiveness(1.5, 0.25, 2) });
let victim: InstanceProcess;
let reader: JobsApp;

beforeAll(async () => {
  // Alone at first: the job starts on the victim.
  victim = await cluster.startProcess('log-victim');
  reader = await cluster.startApp('log-reader', {
    imports: [JobsAdminModule.forRoot({ guard: { canActivate: () => true } })],
    options: { runJobs: false, allowUnknownTasks: true },
  });
}, 90_000);

it('lists the attempt a SIGKILL interrupted (its instance and times), then the one that completed', async () => {
  const { id } = await reader.queue.addJob({
    task: 'record',
    // A minute on attempt 1 (the kill lands in it), 10 ms on attempt 2.
    payload: { ms: [60_000, 10] },
    maxRetries: 1,
  });
  const first = await waitFor('the first attempt to start on the victim', async () =>
    (await cluster.runs([id])).find((run) => run.attempt === 1),
  );
  const survivor = await cluster.startProcess('log-survivor');
  const killedAt = await cluster.kill(victim);
  await waitFor(
    'the job to complete on the survivor',
    async () => (await reader.queue.getJob(id))?.state === 'completed',
    30_000,
  );

  const page = await reader.module.get(JobsAdminService).getJob(id);
  expect(page.attempts).toEqual([
    {
      attempt: 1,
      outcome: 'interrupted',
      executedBy: victim.id,
      startedAt: expect.any(Date),
      endedAt: expect.any(Date),
      // The reaper's reason: the victim fell silent.
      error: expect.stringContaining(victim.id),
      stack: null,
    },
  ]);
  const [interrupted] = page.attempts;
  // Started when the task recorded its run (a little before), ended by the reaper after the kill.
  expect(interrupted.startedAt.getTime()).toBeLessThanOrEqual(first.at.getTime());
  expect(interrupted.endedAt.getTime()).toBeGreaterThanOrEqual(killedAt.getTime());
  // The completed attempt is the history row's, after it.
  expect(page.history).toMatchObject({
    attempt: 2,
    state: 'completed',
    executedBy: survivor.id,
  });
  expect((page.history!.startedAt as Date).getTime()).toBeGreaterThanOrEqual(
    interrupted.endedAt.getTime(),
  );
}, 120_000);
