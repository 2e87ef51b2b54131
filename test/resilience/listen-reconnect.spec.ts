import { startJobsApp } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { executions, recording } from '../support/recorder.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let app: JobsApp;

beforeAll(async () => {
  // Polling far too slow to matter: only the notification can start the job in time.
  app = await startJobsApp(db.url, {
    ...recording('a'),
    options: { pollingCheck: 600, instanceId: 'listener-test' },
  });
});
afterAll(() => app?.close());

async function terminateListener(): Promise<number> {
  const rows = await db.query<{ pid: number }>(
    `SELECT pg_terminate_backend(pid), pid FROM pg_stat_activity
     WHERE datname = current_database() AND application_name LIKE '%listener-test:listen'`,
  );
  return rows.length;
}

async function listening(): Promise<boolean> {
  const rows = await db.query(
    `SELECT 1 FROM pg_stat_activity
     WHERE datname = current_database() AND application_name LIKE '%listener-test:listen'`,
  );
  return rows.length === 1;
}

it('starts a job within 2 s after its LISTEN connection was terminated', async () => {
  expect(await listening()).toBe(true);
  expect(await terminateListener()).toBe(1);

  const addedAt = Date.now();
  const { id, promise } = await app.queue.addJob({ task: 'record', promise: true });
  await promise;
  const started = executions.find((e) => e.id === id)!;
  expect(started.startedAt - addedAt).toBeLessThan(2000);
  expect(await listening()).toBe(true);
});
