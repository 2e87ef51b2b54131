import { threadId } from 'node:worker_threads';
import type { JobDependencies } from 'nestjs-pg-jobs';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { startWorkerApp } from '../support/worker-fixtures.js';

const db = useTestDatabase();
let app: JobsApp;

beforeAll(async () => {
  app = await startWorkerApp(db.url, { workers: 1 });
}, 60_000);

afterAll(() => app?.close());

it("gives a worker task of a flow its dependencies' results in its thread", async () => {
  const flow = await app.queue.addFlow({
    jobs: [
      { ref: 'invoice', task: 'worker.result', payload: { result: { total: 42 } } },
      { ref: 'nothing', task: 'worker.result', payload: {} },
      { ref: 'refused', task: 'worker.giveUp', payload: { message: 'no stock' } },
      {
        ref: 'render',
        task: 'worker.dependencies',
        dependsOn: ['invoice', 'nothing', 'refused'],
        onDependencyFailure: 'run',
      },
      { ref: 'alone', task: 'worker.dependencies' },
    ],
  });
  const render = (await app.queue.waitForJob(flow.jobs.render, { timeout: 30 })) as {
    dependencies: JobDependencies;
    threadId: number;
  };
  expect(render.threadId).not.toBe(threadId);
  expect(render.dependencies).toEqual({
    invoice: { id: flow.jobs.invoice, state: 'completed', result: { total: 42 } },
    nothing: { id: flow.jobs.nothing, state: 'completed' },
    refused: { id: flow.jobs.refused, state: 'failed', error: 'no stock' },
  });
  // A job of the flow with no dependencies has none, in a thread as in-process.
  await expect(app.queue.waitForJob(flow.jobs.alone, { timeout: 30 })).resolves.toMatchObject({
    dependencies: {},
  });
}, 60_000);
