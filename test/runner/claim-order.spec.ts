import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { executions, recording } from '../support/recorder.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
beforeEach(() => executions.splice(0));

it('starts 100 jobs of equal priority in insertion order on a runner with concurrency 1', async () => {
  // Enqueue everything before any runner exists, so order is decided by the claim alone.
  const producer = await startJobsApp(db.url, {
    ...recording('producer'),
    options: { runJobs: false },
  });
  const ids: string[] = [];
  for (let i = 0; i < 100; i++)
    ids.push((await producer.queue.addJob({ task: 'record', payload: { i } })).id);
  await producer.close();

  const runner = await startJobsApp(db.url, {
    ...recording('runner'),
    options: { concurrency: 1 },
  });
  try {
    await waitFor('100 executions', () => executions.length === 100, 20_000);
    expect(executions.map((e) => e.id)).toEqual(ids);
  } finally {
    await runner.close();
  }
});

it('lets a higher priority overtake jobs that were queued before it', async () => {
  const producer = await startJobsApp(db.url, {
    ...recording('producer'),
    options: { runJobs: false },
  });
  const low = await producer.queue.addJobs(Array.from({ length: 5 }, () => ({ task: 'record' })));
  const urgent = await producer.queue.addJob({ task: 'record', priority: 10 });
  const behind = await producer.queue.addJob({ task: 'record', priority: -1 });
  await producer.close();

  const runner = await startJobsApp(db.url, {
    ...recording('runner'),
    options: { concurrency: 1 },
  });
  try {
    await waitFor('7 executions', () => executions.length === 7, 10_000);
    expect(executions.map((e) => e.id)).toEqual([
      urgent.id,
      ...low.map((job) => job.id),
      behind.id,
    ]);
  } finally {
    await runner.close();
  }
});
