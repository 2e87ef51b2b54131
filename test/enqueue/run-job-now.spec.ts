import { InvalidJobOptionsError } from 'nestjs-pg-jobs';
import { FlakyTask } from '../support/flaky-task.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let app: JobsApp;

beforeAll(async () => {
  // Polls a minute apart: a job made due runs within the test only if the instance is woken.
  app = await startJobsApp(db.url, {
    tasks: [FlakyTask],
    options: { pollingCheck: 60, allowUnknownTasks: true },
  });
});
afterAll(() => app?.close());

const inAnHour = () => new Date(Date.now() + 3600_000);
const stateOf = async (id: string) => (await app.queue.getJob(id))?.state;

it('makes a pending job that waits for its time due now, and wakes the instances to run it', async () => {
  const { id } = await app.queue.addJob({ task: 'flaky', waitUntil: inAnHour() });
  expect(await app.queue.runJobNow(id)).toBe(true);
  await waitFor('the job to complete', async () => (await stateOf(id)) === 'completed', 20_000);
  // Ended: nothing to run now.
  expect(await app.queue.runJobNow(id)).toBe(false);
}, 30_000);

it('leaves alone a job that is due already, blocked in a flow, or unknown', async () => {
  const due = await app.queue.addJob({ task: 'nobodyRunsThis' });
  expect(await app.queue.runJobNow(due.id)).toBe(false);
  const flow = await app.queue.addFlow({
    name: 'blocked',
    jobs: [
      { ref: 'first', task: 'nobodyRunsThis', waitUntil: inAnHour() },
      { ref: 'then', task: 'nobodyRunsThis', dependsOn: ['first'] },
    ],
  });
  expect(await app.queue.runJobNow(flow.jobs.then)).toBe(false);
  expect(await stateOf(flow.jobs.then)).toBe('blocked');
  expect(await app.queue.runJobNow('00000000-0000-4000-8000-000000000000')).toBe(false);
  await expect(app.queue.runJobNow('nope')).rejects.toThrow(InvalidJobOptionsError);
  const [{ n }] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs.jobs WHERE "waitUntil" <= now() AND id = $1`,
    [flow.jobs.first],
  );
  expect(n).toBe(0);
});
