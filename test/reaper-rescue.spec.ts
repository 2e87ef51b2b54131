import { waitFor } from './support/jobs-app.js';
import type { JobsApp } from './support/jobs-app.js';
import { useTestDatabase } from './support/test-database.js';
import { fastLiveness, startEnqueuer, useCleanup } from './fixtures/instance/liveness.js';
import { backendCount, createExecutionsTable } from './fixtures/instance/database.js';
import { startInstanceProcess } from './fixtures/instance/instance-process.js';
import type { InstanceProcess } from './fixtures/instance/instance-process.js';

const INSTANCE_TIMEOUT = 1.5;
const REAPER_INTERVAL = 0.25;
const liveness = fastLiveness(INSTANCE_TIMEOUT, REAPER_INTERVAL, 2);
let instances: InstanceProcess[] = [];
let enqueuer: JobsApp;

const track = useCleanup();
const db = useTestDatabase();

beforeAll(async () => {
  await createExecutionsTable(db);
  instances = await Promise.all(
    ['rescue-a', 'rescue-b'].map((instanceId) =>
      startInstanceProcess(db.url, { ...liveness, instanceId }).then(track),
    ),
  );
  enqueuer = track(await startEnqueuer(db.url, 'rescue-enqueuer'));
}, 90_000);

it('runs a killed instance’s job again on a survivor within instanceTimeout + one reaper interval', async () => {
  const { id } = await enqueuer.queue.addJob({ task: 'record', payload: { ms: [60_000, 10] } });
  const first = await waitFor('the first attempt to start', async () => {
    const [row] = await db.query<{ instance: string }>(
      'SELECT instance FROM executions WHERE job_id = $1 AND attempt = 1',
      [id],
    );
    return row;
  });
  const victim = instances.find((instance) => instance.id === first.instance)!;
  const survivor = instances.find((instance) => instance !== victim)!;

  victim.signal('SIGKILL');
  await victim.exited;
  const [{ killedAt }] = await db.query<{ killedAt: Date }>(
    'SELECT clock_timestamp() AS "killedAt"',
  );
  await waitFor('the dead instance’s connections to close', async () => {
    return (await backendCount(db, victim.id)) === 0;
  });

  const second = await waitFor(
    'the second attempt to start',
    async () => {
      const [row] = await db.query<{ instance: string; at: Date }>(
        'SELECT instance, at FROM executions WHERE job_id = $1 AND attempt = 2',
        [id],
      );
      return row;
    },
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
