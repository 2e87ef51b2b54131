import { JobFailedError } from 'nestjs-pg-jobs';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { executions, recording } from '../support/recorder.js';
import { useCluster } from '../support/cluster.js';

const options = { pollingCheck: 0.5, concurrency: 4, maxRetries: 0 };
const cluster = useCluster({ options });
let a: JobsApp;
let b: JobsApp;
let enqueuer: JobsApp;

beforeAll(async () => {
  [a, b] = await cluster.startApps(['a', 'b'], recording);
  // Runs no jobs, so a job it awaits must run on a or b.
  enqueuer = await cluster.startEnqueuer('enqueuer', options);
});
beforeEach(() => executions.splice(0));

const completed = async () => (await cluster.states()).completed ?? 0;

it('runs a job added on one instance exactly once while two instances compete for it', async () => {
  const { id, promise } = await a.queue.addJob({ task: 'record', promise: true });
  await promise;
  expect(executions.filter((e) => e.id === id)).toHaveLength(1);
  expect((await b.queue.getJob(id))?.state).toBe('completed');
});

it('runs each of 500 jobs exactly once across two instances', async () => {
  await cluster.db.query(`DELETE FROM jobs."jobHistory"`);
  const added = await a.queue.addJobs(
    Array.from({ length: 500 }, (_, i) => ({ task: 'record', payload: { i } })),
  );
  await waitFor('500 completed jobs', async () => (await completed()) === 500, 30_000);
  const ids = executions.map((e) => e.id);
  expect(new Set(ids).size).toBe(500);
  expect(ids).toHaveLength(500);
  expect(new Set(ids)).toEqual(new Set(added.map((job) => job.id)));
  // Both instances took part; which one ran what is up to them.
  expect(new Set(executions.map((e) => e.instance))).toEqual(new Set(['a', 'b']));
});

it('resolves a promise held on one instance when the job completes on another', async () => {
  const { id, promise } = await enqueuer.queue.addJob({
    task: 'record',
    payload: { ms: 20 },
    promise: true,
  });
  await expect(promise).resolves.toBeUndefined();
  expect(['a', 'b']).toContain(executions.find((e) => e.id === id)?.instance);
});

it("rejects a promise held on one instance with the task's message when the job fails on another", async () => {
  const { id, promise } = await enqueuer.queue.addJob({
    task: 'record',
    payload: { fail: 'the printer is on fire' },
    promise: true,
  });
  await expect(promise).rejects.toThrow(JobFailedError);
  await expect(promise).rejects.toThrow('the printer is on fire');
  expect(executions.filter((e) => e.id === id)).toHaveLength(1);
});
