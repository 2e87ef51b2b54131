import { waitFor } from './support/jobs-app.js';
import type { JobsApp } from './support/jobs-app.js';
import { useTestDatabase } from './support/test-database.js';
import { fastLiveness, startEnqueuer, useCleanup } from './fixtures/instance/liveness.js';
import { createExecutionsTable } from './fixtures/instance/database.js';
import { startInstanceProcess } from './fixtures/instance/instance-process.js';
import type { InstanceProcess } from './fixtures/instance/instance-process.js';

const liveness = fastLiveness(1.5, 0.25, 2);
let paused: InstanceProcess;
let enqueuer: JobsApp;

const track = useCleanup();
const db = useTestDatabase();

beforeAll(async () => {
  await createExecutionsTable(db);
  enqueuer = track(await startEnqueuer(db.url, 'fencing-enqueuer'));
  // The survivor boots only once the job runs on the other: the job has exactly one place to start.
  paused = track(await startInstanceProcess(db.url, { ...liveness, instanceId: 'fencing-paused' }));
}, 90_000);

it('drops and reports the late result of an instance paused past instanceTimeout', async () => {
  // The first attempt outlasts the pause; the second is quick.
  const { id } = await enqueuer.queue.addJob({ task: 'record', payload: { ms: [4_000, 10] } });
  await waitFor('the first attempt to start', async () => {
    const rows = await db.query('SELECT 1 FROM executions WHERE job_id = $1', [id]);
    return rows.length === 1;
  });
  paused.signal('SIGSTOP');
  track(await startInstanceProcess(db.url, { ...liveness, instanceId: 'fencing-survivor' }));

  await waitFor(
    'the survivor to complete the job',
    async () => (await enqueuer.queue.getJob(id))?.state === 'completed',
    30_000,
  );
  const newer = await enqueuer.queue.getJob(id);
  expect(newer).toMatchObject({ attempt: 2, executedBy: 'fencing-survivor' });

  // Back from the pause its timer fires at once: the first attempt ends and tries to record it.
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
  const attempts = await db.query<{ instance: string; attempt: number }>(
    'SELECT instance, attempt FROM executions WHERE job_id = $1 ORDER BY at',
    [id],
  );
  expect(attempts).toEqual([
    { instance: 'fencing-paused', attempt: 1 },
    { instance: 'fencing-survivor', attempt: 2 },
  ]);
}, 90_000);
