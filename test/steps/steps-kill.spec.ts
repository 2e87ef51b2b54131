import type { InstanceProcess } from '../fixtures/instance/instance-process.js';
import { fastLiveness, useCluster } from '../support/cluster.js';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';

const cluster = useCluster({ options: fastLiveness(1.5, 0.25, 4) });
let victim: InstanceProcess;
let enqueuer: JobsApp;

beforeAll(async () => {
  // Alone at first: the job starts on the victim.
  victim = await cluster.startProcess('steps-victim');
  enqueuer = await cluster.startEnqueuer('steps-enqueuer');
}, 90_000);

it('runs only the third step on the attempt after a SIGKILL in it: the first two are replayed', async () => {
  const { id } = await enqueuer.queue.addJob({
    task: 'threeSteps',
    // Step c takes a minute on attempt 1 (the kill lands in it), 10 ms on attempt 2.
    payload: { ms: [60_000, 10] },
    maxRetries: 1,
  });
  const stepRuns = async () =>
    (await cluster.runs([id])).map((run) => run.instance.replace(/^.*\//, ''));
  await waitFor('step c to run on the victim', async () => (await stepRuns()).includes('c'));

  const survivor = await cluster.startProcess('steps-survivor');
  await cluster.kill(victim);

  expect(await enqueuer.queue.waitForJob(id, { timeout: 60 })).toEqual({ a: 1, b: 2, c: 3 });
  // a and b ran once, on the victim; c twice: killed there, then again on the survivor.
  const runs = await cluster.runs([id]);
  expect(runs.map((run) => [run.instance, run.attempt])).toEqual([
    ['steps-victim/a', 1],
    ['steps-victim/b', 1],
    ['steps-victim/c', 1],
    ['steps-survivor/c', 2],
  ]);
  const job = await enqueuer.queue.getJob(id);
  expect(job).toMatchObject({ state: 'completed', attempt: 2, executedBy: survivor.id });
  expect(job!.steps.map((step) => [step.name, step.state])).toEqual([
    ['a', 'completed'],
    ['b', 'completed'],
    ['c', 'completed'],
  ]);
}, 120_000);
