import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { fastLiveness, useCluster } from '../support/cluster.js';

const INSTANCE_TIMEOUT = 1.5;
const cluster = useCluster({ options: fastLiveness(INSTANCE_TIMEOUT, 0.25, 4) });
const { db } = cluster;
let enqueuer: JobsApp;

beforeAll(async () => {
  enqueuer = await cluster.startEnqueuer('loss-enqueuer');
}, 30_000);

/** How many of `ids` have started at least once. */
async function started(ids: string[]): Promise<number> {
  return new Set((await cluster.runs(ids)).map((run) => run.jobId)).size;
}

it('survives the termination of all its backends mid-run: in-flight jobs end, new ones run', async () => {
  const instance = await cluster.startProcess('loss-terminated');
  const inFlight = (
    await enqueuer.queue.addJobs(
      Array.from({ length: 8 }, () => ({ task: 'record', payload: { ms: 600 } })),
    )
  ).map((job) => job.id);
  await waitFor('four jobs to be running', async () => (await started(inFlight)) >= 4);

  const terminated = await db.query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
     WHERE datname = current_database() AND application_name LIKE 'nestjs-pg-jobs loss-terminated%'`,
  );
  expect(terminated.length).toBeGreaterThanOrEqual(2); // at least its pool and its LISTEN session

  await waitFor(
    'the in-flight jobs to end',
    async () => (await cluster.states(inFlight)).completed === inFlight.length,
    20_000,
  );
  const { id, promise } = await enqueuer.queue.addJob({ task: 'record', promise: true });
  await promise;
  expect(await cluster.states([id])).toEqual({ completed: 1 });
  expect(instance.child.exitCode).toBeNull();
  // It noticed, said so, and is listening again.
  expect(instance.logs.some((line) => line.message.includes('LISTEN connection lost'))).toBe(true);
  await waitFor('the LISTEN session to be back', async () => {
    const rows = await db.query(
      `SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
       AND application_name = 'nestjs-pg-jobs loss-terminated:listen'`,
    );
    return rows.length === 1;
  });
  // Out of the way of the next test's jobs.
  await instance.stop();
}, 60_000);

it('keeps the result of a job that finished while the database was unreachable', async () => {
  const { instance, proxy } = await cluster.startProcessBehindProxy('loss-unreachable');

  // It ends while the database is away, and the outage outlasts instanceTimeout.
  const { id } = await enqueuer.queue.addJob({ task: 'record', payload: { ms: 1_000 } });
  await waitFor('the job to start', async () => (await started([id])) === 1);
  await proxy.down();
  await waitFor(
    'the instance to fail recording the result',
    () =>
      instance.logs.some((line) => line.message.includes('Cannot reach the database to record')),
    20_000,
  );
  await waitFor('the outage to outlast instanceTimeout', () =>
    instance.logs.some((line) => line.message.includes('Heartbeat failed')),
  );
  // The instance's own retry timers are under test here, so its outage is real time; the
  // database's clock says when it has lasted longer than instanceTimeout.
  await waitFor('its last heartbeat to be older than instanceTimeout', async () => {
    const [row] = await db.query<{ silent: boolean }>(
      `SELECT "heartbeatAt" < now() - make_interval(secs => $2) AS silent
       FROM jobs.instances WHERE id = $1`,
      [instance.id, INSTANCE_TIMEOUT],
    );
    return row?.silent;
  });
  await proxy.up();

  await waitFor(
    'the job to be recorded',
    async () => (await cluster.states([id])).completed === 1,
    20_000,
  );
  expect(await enqueuer.queue.getJob(id)).toMatchObject({
    attempt: 1,
    executedBy: 'loss-unreachable',
  });
  expect(await cluster.runs([id])).toHaveLength(1);

  // And it goes on working.
  const next = await enqueuer.queue.addJob({ task: 'record', promise: true });
  await next.promise;
  expect(instance.child.exitCode).toBeNull();
  expect(await cluster.backendCount('loss-unreachable')).toBeGreaterThan(0);
}, 60_000);
