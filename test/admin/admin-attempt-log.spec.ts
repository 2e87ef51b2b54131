import { JobsAdminModule } from 'nestjs-pg-jobs';
import type { FailedAttemptInfo } from 'nestjs-pg-jobs';
import { FlakyTask } from '../support/flaky-task.js';
import { json, startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let server: HttpJobsApp;

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ guard: { canActivate: () => true } })],
    tasks: [FlakyTask],
    // Retries due at once: the job's three attempts run within the test.
    options: { pollingCheck: 0.1, retryBackoff: 0.01, maxRetries: 2 },
  });
});
afterAll(() => server?.close());

interface JobPage {
  job: { state: string };
  history: { attempt: number; state: string };
  attempts: FailedAttemptInfo[];
}

it('lists every failed attempt of a job, with its instance, times, error and stack, after the history row took its last', async () => {
  const { id } = await server.queue.addJob({
    task: 'flaky',
    payload: { failUntilAttempt: 2, message: 'the printer is on fire' },
  });
  await waitFor(
    'the third attempt to complete',
    async () => (await server.queue.getJob(id))?.state === 'completed',
  );
  const page: JobPage = await json(fetch(`${server.url}/jobs-admin/api/jobs/${id}`));
  expect(page.history).toMatchObject({ attempt: 3, state: 'completed' });
  expect(page.attempts.map((a) => a.attempt)).toEqual([1, 2]);
  const instanceId = (await server.queue.getJob(id))!.executedBy;
  for (const attempt of page.attempts) {
    expect(attempt).toMatchObject({ error: 'the printer is on fire', executedBy: instanceId });
    // The stack says where the task threw.
    expect(attempt.stack).toMatch(/^Error: the printer is on fire\n\s+at .*flaky-task/);
    expect(new Date(attempt.endedAt).getTime()).toBeGreaterThanOrEqual(
      new Date(attempt.startedAt!).getTime(),
    );
  }
  expect(new Date(page.attempts[0].endedAt) <= new Date(page.attempts[1].startedAt!)).toBe(true);
});

it('records nothing for a job that completes at its first attempt', async () => {
  const { id } = await server.queue.addJob({ task: 'flaky' });
  await waitFor(
    'the job to complete',
    async () => (await server.queue.getJob(id))?.state === 'completed',
  );
  const page: JobPage = await json(fetch(`${server.url}/jobs-admin/api/jobs/${id}`));
  expect(page.attempts).toEqual([]);
  expect(await db.query(`SELECT 1 FROM jobs."jobAttempt" WHERE "jobId" = $1`, [id])).toEqual([]);
});
