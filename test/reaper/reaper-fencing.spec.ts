import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { fastLiveness, useCluster } from '../support/cluster.js';
import type { InstanceProcess } from '../fixtures/instance/instance-process.js';

const cluster = useCluster({ options: fastLiveness(1.5, 0.25, 2) });
const { db } = cluster;
let paused: InstanceProcess;
let enqueuer: JobsApp;

beforeAll(async () => {
  enqueuer = await cluster.startEnqueuer('fencing-enqueuer');
  // The survivor boots only once the job runs on the other: the job has exactly one place to start.
  paused = await cluster.startProcess('fencing-paused');
}, 90_000);

it('drops and reports the late result of an instance paused past instanceTimeout', async () => {
  // The first attempt outlasts the pause; the second is quick.
  const { id } = await enqueuer.queue.addJob({ task: 'record', payload: { ms: [4_000, 10] } });
  await waitFor('the first attempt to start', async () => (await cluster.runs([id])).length === 1);
  paused.signal('SIGSTOP');
  // A pause of a minute, as the database sees it: the registration and the attempt a minute older.
  await db.query(
    `UPDATE jobs.instances SET "startedAt" = "startedAt" - interval '1 minute',
                               "heartbeatAt" = "heartbeatAt" - interval '1 minute'
     WHERE id = 'fencing-paused'`,
  );
  await db.query(
    `UPDATE jobs."jobHistory" SET "startedAt" = "startedAt" - interval '1 minute' WHERE id = $1`,
    [id],
  );
  await cluster.startProcess('fencing-survivor');

  await waitFor(
    'the survivor to complete the job',
    async () => (await enqueuer.queue.getJob(id))?.state === 'completed',
    30_000,
  );
  const newer = await enqueuer.queue.getJob(id);
  expect(newer).toMatchObject({ attempt: 2, executedBy: 'fencing-survivor' });

  // Back from the pause, its first attempt ends and tries to record it.
  paused.signal('SIGCONT');
  const fenced = await waitFor(
    'the stale write to be reported',
    () =>
      paused.logs.find(
        (line) =>
          line.level === 'warn' &&
          line.message.includes(id) &&
          line.message.includes('no longer the active one'),
      ),
    15_000,
  );
  expect(fenced.message).toContain('attempt 1');
  await waitFor('the paused instance to notice it was presumed dead', () =>
    paused.logs.some((line) => line.message.includes('was presumed dead')),
  );

  // The newer attempt's result stands and the job was not queued again.
  expect(await enqueuer.queue.getJob(id)).toMatchObject({
    state: 'completed',
    attempt: 2,
    executedBy: 'fencing-survivor',
    completedAt: newer!.completedAt,
  });
  expect(await db.query('SELECT 1 FROM jobs.jobs WHERE id = $1', [id])).toEqual([]);
  const attempts = (await cluster.runs([id])).map(({ instance, attempt }) => ({
    instance,
    attempt,
  }));
  expect(attempts).toEqual([
    { instance: 'fencing-paused', attempt: 1 },
    { instance: 'fencing-survivor', attempt: 2 },
  ]);
}, 90_000);
