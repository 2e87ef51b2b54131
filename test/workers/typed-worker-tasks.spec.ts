import { threadId } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { InvalidPayloadError, JobFailedError, JobsAdminModule } from 'nestjs-pg-jobs';
import { Scale } from '../fixtures/workers/typed-worker-task.js';
import { startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { THREAD_LOADER_EXEC_ARGV } from '../support/worker-fixtures.js';

const db = useTestDatabase();

let runner: HttpJobsApp;
/** Enqueues only, with the imported definition and no pool. */
let producer: JobsApp;
/** Enqueues any task name unchecked: what a deploy without the schemas did. */
let legacy: JobsApp;

beforeAll(async () => {
  runner = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ path: 'admin', guard: { canActivate: () => true } })],
    options: {
      instanceId: 'runner',
      workers: 1,
      workerModule: fileURLToPath(
        new URL('../fixtures/workers/typed-worker.module.ts', import.meta.url),
      ),
      workerExecArgv: THREAD_LOADER_EXEC_ARGV,
      pollingCheck: 0.2,
    },
  });
  producer = await startJobsApp(db.url, { options: { runJobs: false, instanceId: 'producer' } });
  legacy = await startJobsApp(db.url, {
    options: { runJobs: false, allowUnknownTasks: true, instanceId: 'legacy' },
  });
}, 60_000);
afterAll(() => runner?.close());

const failed = (id: string) =>
  waitFor(`job ${id} to fail`, async () => {
    const row = await db.historyOf(id);
    return row?.state === 'failed' && row;
  });

it('parses the payload in the pool thread and resolves with the result schema output', async () => {
  const { promise } = await producer.queue.addJob({
    task: Scale,
    payload: { factor: '3' },
    promise: true,
  });
  const result = await promise;
  expect(result).toEqual({
    seen: { factor: 3, base: 10 },
    threadId: expect.any(Number),
    tag: 'checked in the thread',
  });
  expect(result.threadId).not.toBe(threadId);
}, 30_000);

it('refuses a bad payload at enqueue on an instance that only imports the definition', async () => {
  await expect(
    producer.queue.addJob({ task: Scale, payload: { factor: 3 as unknown as string } }),
  ).rejects.toThrow(InvalidPayloadError);
});

it('fails, with no retry, a stored payload the schema refuses in the thread', async () => {
  const { id, promise } = await legacy.queue.addJob({
    task: Scale.name,
    payload: { factor: '2', base: 'ten' },
    promise: true,
  });
  await expect(promise).rejects.toThrow(JobFailedError);
  const row = await failed(id);
  expect(row.attempt).toBe(1);
  expect(row.lastErrorMessage).toContain('payloadSchema of task "worker.typedScale"');
  expect(row.lastErrorMessage).toContain('$.base');
}, 30_000);

it('fails, with no retry, a result the schema refuses in the thread', async () => {
  const { id, promise } = await producer.queue.addJob({
    task: Scale,
    payload: { factor: '-1' },
    promise: true,
  });
  await expect(promise).rejects.toThrow('does not match its resultSchema');
  const row = await failed(id);
  expect(row.attempt).toBe(1);
  expect(row.lastErrorMessage).toContain('$.threadId');
}, 30_000);

it("lists the worker task with its payload's JSON Schema, which the thread reported", async () => {
  const response = await fetch(`${runner.url}/admin/api/tasks`);
  const { tasks } = (await response.json()) as {
    tasks: { name: string; worker: boolean; payloadJsonSchema: Record<string, unknown> }[];
  };
  expect(tasks).toEqual([
    expect.objectContaining({
      name: 'worker.typedScale',
      worker: true,
      payloadJsonSchema: expect.objectContaining({
        type: 'object',
        properties: expect.objectContaining({ factor: { type: 'string' } }),
      }),
    }),
  ]);
});
