import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { fastLiveness, useCluster } from '../support/cluster.js';
import type { InstanceProcess } from '../fixtures/instance/instance-process.js';

const INSTANCE_TIMEOUT = 1.5;
const REAPER_INTERVAL = 0.25;
const cluster = useCluster({ options: fastLiveness(INSTANCE_TIMEOUT, REAPER_INTERVAL, 2) });
let instances: InstanceProcess[];
let enqueuer: JobsApp;

beforeAll(async () => {
  instances = await cluster.startProcesses(['rescue-a', 'rescue-b']);
  enqueuer = await cluster.startEnqueuer('rescue-enqueuer');
}, 90_000);

it('runs a killed instance’s job again on a survivor within instanceTimeout + one reaper interval', async () => {
  const { id } = await enqueuer.queue.addJob({ task: 'record', payload: { ms: [60_000, 10] } });
  const first = await waitFor('the first attempt to start', async () =>
    (await cluster.runs([id])).find((run) => run.attempt === 1),
  );
  const victim = instances.find((instance) => instance.id === first.instance)!;
  const survivor = instances.find((instance) => instance !== victim)!;

  const killedAt = await cluster.kill(victim);

  const second = await waitFor(
    'the second attempt to start',
    async () => (await cluster.runs([id])).find((run) => run.attempt === 2),
    20_000,
  );
  expect(second.instance).toBe(survivor.id);
  // Database times on both ends. Beyond the bound itself, the margin covers the claim and the
  // recording insert on two shared cores; the seed's reaper took staleJobTimeout (an hour).
  const rescueSeconds = (second.at.getTime() - killedAt.getTime()) / 1000;
  expect(rescueSeconds).toBeLessThan(INSTANCE_TIMEOUT + REAPER_INTERVAL + 1.5);

  await waitFor('the job to complete', async () => {
    return (await enqueuer.queue.getJob(id))?.state === 'completed';
  });
  const job = await enqueuer.queue.getJob(id);
  expect(job).toMatchObject({ attempt: 2, executedBy: survivor.id });
}, 60_000);
