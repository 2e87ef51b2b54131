import { JobsAdminModule } from 'nestjs-pg-jobs';
import type { InstanceInfo } from 'nestjs-pg-jobs';
import { GatedTask, openGate, started } from '../support/gated-task.js';
import { json, startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let server: HttpJobsApp;

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ guard: { canActivate: () => true } })],
    tasks: [GatedTask],
    options: { pollingCheck: 0.1, concurrency: 7 },
  });
});
afterAll(() => server?.close());

const instances = async (): Promise<InstanceInfo[]> =>
  (await json(fetch(`${server.url}/jobs-admin/api/instances`))).instances;

it('lists each instance with its heartbeat and the jobs it runs now', async () => {
  const { id } = await server.queue.addJob({ task: 'gated' });
  await waitFor('the job to start', async () => started.has(id));
  const [me] = await instances();
  expect(me).toMatchObject({
    alive: true,
    concurrency: 7,
    running: 1,
    jobs: [{ id, task: 'gated' }],
  });
  expect(me.id).toBe((await server.queue.getJob(id))!.executedBy);
  expect(me.silentForSeconds).toBeLessThan(60);

  openGate(id);
  await waitFor(
    'the job to end',
    async () => (await server.queue.getJob(id))?.state === 'completed',
  );
  expect(await instances()).toEqual([expect.objectContaining({ running: 0, jobs: [] })]);
});

it('says an instance whose heartbeat stopped is presumed dead', async () => {
  await db.query(
    `INSERT INTO jobs.instances (id, hostname, pid, "heartbeatAt", "instanceTimeout")
     VALUES ('gone', 'old-host', 1, now() - interval '10 minutes', 60)`,
  );
  const gone = (await instances()).find((instance) => instance.id === 'gone');
  // An instance of a version that did not record its concurrency.
  expect(gone).toMatchObject({ alive: false, hostname: 'old-host', concurrency: null, running: 0 });
  expect(gone!.silentForSeconds).toBeGreaterThanOrEqual(600);
});

it('says an instance that runs no jobs runs 0 at once', async () => {
  const enqueuer = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ guard: { canActivate: () => true } })],
    options: { runJobs: false, instanceId: 'enqueuer' },
  });
  try {
    const listed = (await instances()).find((instance) => instance.id === 'enqueuer');
    expect(listed).toMatchObject({ alive: true, concurrency: 0, running: 0 });
  } finally {
    await enqueuer.close();
  }
});
