import { waitFor } from './support/jobs-app.js';
import type { JobsApp } from './support/jobs-app.js';
import { useTestDatabase } from './support/test-database.js';
import { fastLiveness, startEnqueuer } from './fixtures/instance/liveness.js';
import { backendCount, createExecutionsTable } from './fixtures/instance/database.js';
import { startInstanceProcess } from './fixtures/instance/instance-process.js';
import type { InstanceProcess } from './fixtures/instance/instance-process.js';
import { TcpProxy } from './fixtures/instance/tcp-proxy.js';

const INSTANCE_TIMEOUT = 1.5;
const liveness = fastLiveness(INSTANCE_TIMEOUT, 0.25, 4);
let enqueuer: JobsApp;
const instances: InstanceProcess[] = [];
const proxies: TcpProxy[] = [];

// Declared before the database: Jest runs afterAll hooks in declaration order, and the apps
// must close while their database still exists.
afterAll(async () => {
  await Promise.all(proxies.map((proxy) => proxy.up().catch(() => undefined)));
  await enqueuer?.close();
  await Promise.all(instances.map((instance) => instance.stop()));
  await Promise.all(proxies.map((proxy) => proxy.down()));
});
const db = useTestDatabase();

beforeAll(async () => {
  await createExecutionsTable(db);
  enqueuer = await startEnqueuer(db.url, 'loss-enqueuer');
}, 30_000);

async function states(ids: string[]): Promise<Record<string, number>> {
  const rows = await db.query<{ state: string; n: number }>(
    `SELECT state, count(*)::int AS n FROM jobs."jobHistory" WHERE id = ANY($1::uuid[]) GROUP BY state`,
    [ids],
  );
  return Object.fromEntries(rows.map((row) => [row.state, row.n]));
}

async function started(ids: string[]): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    'SELECT count(DISTINCT job_id)::int AS n FROM executions WHERE job_id = ANY($1::uuid[])',
    [ids],
  );
  return row.n;
}

it('survives the termination of all its backends mid-run: in-flight jobs end, new ones run', async () => {
  const instance = await startInstanceProcess(db.url, {
    ...liveness,
    instanceId: 'loss-terminated',
  });
  instances.push(instance);
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
    async () => (await states(inFlight)).completed === inFlight.length,
    20_000,
  );
  const { id, promise } = await enqueuer.queue.addJob({ task: 'record', promise: true });
  await promise;
  expect(await states([id])).toEqual({ completed: 1 });
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
  const target = new URL(db.url);
  const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
  proxies.push(proxy);
  await proxy.up();
  const instance = await startInstanceProcess(
    proxy.rewrite(db.url),
    { ...liveness, instanceId: 'loss-unreachable' },
    db.url,
  );
  instances.push(instance);

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
  await new Promise((resolve) => setTimeout(resolve, INSTANCE_TIMEOUT * 1000));
  await proxy.up();

  await waitFor('the job to be recorded', async () => (await states([id])).completed === 1, 20_000);
  expect(await enqueuer.queue.getJob(id)).toMatchObject({
    attempt: 1,
    executedBy: 'loss-unreachable',
  });
  expect(await started([id])).toBe(1);
  const [{ runs }] = await db.query<{ runs: number }>(
    'SELECT count(*)::int AS runs FROM executions WHERE job_id = $1',
    [id],
  );
  expect(runs).toBe(1);

  // And it goes on working.
  const next = await enqueuer.queue.addJob({ task: 'record', promise: true });
  await next.promise;
  expect(instance.child.exitCode).toBeNull();
  expect(await backendCount(db, 'loss-unreachable')).toBeGreaterThan(0);
}, 60_000);
