import { collectReports } from '../fixtures/workers/report.js';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { startWorkerApp } from '../support/worker-fixtures.js';

const db = useTestDatabase();
const channel = collectReports();
afterAll(() => channel.close());
let app: JobsApp;

beforeAll(async () => {
  app = await startWorkerApp(db.url, { workers: 1 });
}, 60_000);

it('runs durable steps in a pool thread: checkpoints kept by the main thread, a sleep suspends, the resume replays', async () => {
  const { id } = await app.queue.addJob({ task: 'worker.steps', payload: { seconds: 1 } });
  await waitFor(
    'the job to be suspended',
    async () => (await app.queue.getJob(id))?.state === 'suspended',
  );
  const suspended = await app.queue.getJob(id);
  expect(suspended!.steps.map((step) => [step.name, step.state])).toEqual([
    ['draw', 'completed'],
    ['report', 'completed'],
    ['nap', 'running'],
  ]);
  const result = (await app.queue.waitForJob(id, { timeout: 30 })) as {
    drawn: number;
    after: string;
  };
  // The resumed run got the first run's number from its checkpoint, and reported once.
  const reports = channel.reports.filter(
    (report) => report.id === id && report.event === 'stepped',
  );
  expect(reports.map((report) => Number(report.detail))).toEqual([result.drawn]);
  expect(result.after).toBe('number');
  const job = await app.queue.getJob(id);
  expect(job).toMatchObject({ state: 'completed', attempt: 1 });
  expect(job!.steps.map((step) => [step.name, step.state])).toEqual([
    ['draw', 'completed'],
    ['report', 'completed'],
    ['nap', 'completed'],
    ['after', 'completed'],
  ]);
}, 60_000);
