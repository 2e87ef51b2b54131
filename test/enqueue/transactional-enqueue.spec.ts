import { DataSource } from 'typeorm';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { executions, recording } from '../support/recorder.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let app: JobsApp;
let appDataSource: DataSource;

beforeAll(async () => {
  // The app's own TypeORM connection, in whose transactions jobs are enqueued.
  appDataSource = await new DataSource({ type: 'postgres', url: db.url }).initialize();
  await appDataSource.query('CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL)');
  app = await startJobsApp(db.url, { ...recording('a'), options: { pollingCheck: 0.2 } });
});
afterAll(async () => {
  await app?.close();
  await appDataSource?.destroy();
});

it('never creates nor runs a job enqueued in a transaction that rolls back', async () => {
  let jobId = '';
  await expect(
    appDataSource.transaction(async (manager) => {
      await manager.query(`INSERT INTO orders (item) VALUES ('lost')`);
      jobId = (await app.queue.addJob({ task: 'record', manager })).id;
      throw new Error('checkout failed');
    }),
  ).rejects.toThrow('checkout failed');

  // A job that did commit afterwards runs: once it has, the rolled-back one had every chance to.
  const { promise } = await app.queue.addJob({ task: 'record', promise: true });
  await promise;
  expect(await app.queue.getJob(jobId)).toBeNull();
  expect(executions.some((e) => e.id === jobId)).toBe(false);
  expect(await db.query(`SELECT * FROM orders`)).toEqual([]);
});

it('runs a job enqueued in a transaction once it commits, and not before', async () => {
  let jobId = '';
  await appDataSource.transaction(async (manager) => {
    await manager.query(`INSERT INTO orders (item) VALUES ('book')`);
    jobId = (await app.queue.addJob({ task: 'record', manager })).id;
    // Not visible outside the transaction yet.
    expect(await app.queue.getJob(jobId)).toBeNull();
  });
  await waitFor(
    'the committed job to complete',
    async () => (await app.queue.getJob(jobId))?.state === 'completed',
  );
  expect(executions.filter((e) => e.id === jobId)).toHaveLength(1);
});

it('shares an existing TypeORM DataSource instead of opening its own pool', async () => {
  const shared = await startJobsApp(db.url, {
    ...recording('shared'),
    options: { connection: undefined, dataSource: appDataSource, instanceId: 'shared-instance' },
  });
  try {
    const { id, promise } = await shared.queue.addJob({ task: 'record', promise: true });
    await promise;
    expect((await shared.queue.getJob(id))?.state).toBe('completed');
  } finally {
    await shared.close();
  }
  // Closing the module leaves the app's DataSource open.
  expect(appDataSource.isInitialized).toBe(true);
  expect(await appDataSource.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
});
