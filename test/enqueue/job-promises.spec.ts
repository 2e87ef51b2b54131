import { NotificationListener } from '../../libs/jobs/src/notify/notification-listener.js';
import { startJobsApp } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { executions, recording } from '../support/recorder.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

/** An instance that only enqueues and waits: the jobs run on `runner()`, started once they are added. */
function producer(name: string): Promise<JobsApp> {
  return startJobsApp(db.url, {
    ...recording(name),
    options: { runJobs: false, pollingCheck: 0.2, promiseTimeout: 10, allowUnknownTasks: true },
  });
}

function runner(): Promise<JobsApp> {
  return startJobsApp(db.url, { ...recording('runner'), options: { pollingCheck: 0.2 } });
}

it('resolves an awaited add deduplicated onto a pending job that was added without a promise', async () => {
  const app = await producer('dedup-unawaited');
  const first = await app.queue.addJob({ task: 'record', uniqueKey: 'report:1' });
  const second = await app.queue.addJob({ task: 'record', uniqueKey: 'report:1', promise: true });
  expect(second).toMatchObject({ id: first.id, deduplicated: true });
  // No NOTIFY will tell of this job's end (nobody awaited it when it was added): the poll must.
  const run = await runner();
  await expect(second.promise).resolves.toBeUndefined();
  expect(executions.filter((execution) => execution.id === first.id)).toHaveLength(1);
  await run.close();
  await app.close();
});

it('resolves every awaited add of one unique key, across calls and within a batch', async () => {
  const app = await producer('dedup-awaited');
  const first = await app.queue.addJob({ task: 'record', uniqueKey: 'report:2', promise: true });
  const again = await app.queue.addJob({ task: 'record', uniqueKey: 'report:2', promise: true });
  const batch = await app.queue.addJobs([
    { task: 'record', uniqueKey: 'report:3', promise: true },
    { task: 'record', uniqueKey: 'report:3', promise: true },
  ]);
  expect(again).toMatchObject({ id: first.id, deduplicated: true });
  expect(batch[1]).toMatchObject({ id: batch[0].id, deduplicated: true });
  const run = await runner();
  await expect(
    Promise.all([first.promise, again.promise, batch[0].promise, batch[1].promise]),
  ).resolves.toHaveLength(4);
  await run.close();
  await app.close();
});

it('settles awaited jobs on polling alone when LISTEN is down, as behind a transaction pooler', async () => {
  const app = await producer('no-listen');
  await app.module.get(NotificationListener, { strict: false }).stop();
  const done = await app.queue.addJob({ task: 'record', promise: true });
  const failed = await app.queue.addJob({
    task: 'record',
    payload: { fail: 'the printer is on fire' },
    maxRetries: 0,
    promise: true,
  });
  const run = await runner();
  await expect(done.promise).resolves.toBeUndefined();
  await expect(failed.promise).rejects.toThrow('the printer is on fire');
  await run.close();
  await app.close();
});
