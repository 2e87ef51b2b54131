import { Injectable } from '@nestjs/common';
import { JobsAdminModule, JobTask } from 'nestjs-pg-jobs';
import type { AttemptInfo, JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { endingSql } from '../../libs/jobs/src/runner/ending.sql.js';
import { FlakyTask } from '../support/flaky-task.js';
import { GatedTask, openGate, started } from '../support/gated-task.js';
import { json, startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let server: HttpJobsApp;

/** Snoozes its first run, briefly, and completes the next. */
@JobTask('snoozeFirst')
@Injectable()
class SnoozeFirstTask implements JobTaskHandler<unknown, string> {
  private readonly seen = new Set<string>();

  run(_payload: unknown, ctx: JobContext) {
    if (this.seen.has(ctx.id)) return 'awake';
    this.seen.add(ctx.id);
    return ctx.snooze(0.2);
  }
}

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ guard: { canActivate: () => true } })],
    tasks: [FlakyTask, SnoozeFirstTask, GatedTask],
    // Retries due at once: the job's three attempts run within the test.
    options: { pollingCheck: 0.1, retryBackoff: 0.01, maxRetries: 2 },
  });
});
afterAll(() => server?.close());

interface JobPage {
  job: { state: string };
  history: { attempt: number; state: string; startedAt: string; executedBy: string };
  attempts: AttemptInfo[];
}

const pageOf = (id: string): Promise<JobPage> =>
  json(fetch(`${server.url}/jobs-admin/api/jobs/${id}`));

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
  expect(page.attempts.map((a) => [a.attempt, a.outcome])).toEqual([
    [1, 'failed'],
    [2, 'failed'],
  ]);
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

it('lists a snoozed attempt, then the completed one after it, under the same number', async () => {
  const { id } = await server.queue.addJob({ task: 'snoozeFirst' });
  await waitFor(
    'the run after the snooze to complete',
    async () => (await server.queue.getJob(id))?.state === 'completed',
  );
  const page = await pageOf(id);
  const instanceId = (await server.queue.getJob(id))!.executedBy;
  expect(page.attempts).toEqual([
    {
      attempt: 1,
      outcome: 'snoozed',
      executedBy: instanceId,
      startedAt: expect.any(String),
      endedAt: expect.any(String),
      error: null,
      stack: null,
    },
  ]);
  // The completed run is history's, with the same number, started after the snooze ended.
  expect(page.history).toMatchObject({ attempt: 1, state: 'completed', executedBy: instanceId });
  expect(new Date(page.history.startedAt) > new Date(page.attempts[0].endedAt)).toBe(true);
});

it('records an ending once: the same write repeated (its answer lost) finds no active attempt', async () => {
  const { id } = await server.queue.addJob({ task: 'gated', maxRetries: 0 });
  await waitFor('the attempt to start', () => started.has(id));
  const [active] = await db.query<{ attempt: number; claim: string }>(
    `SELECT attempt, "claimToken"::text AS claim FROM jobs."jobHistory" WHERE id = $1`,
    [id],
  );
  const { fail } = endingSql(toSchemaName('jobs'));
  const write = fail.values({
    id,
    attempt: active.attempt,
    claim: active.claim,
    channel: 'jobs_scheduler',
    error: 'written twice',
    retryBackoff: 1,
    requeuedBy: 'test',
    maxRetryDelay: 1,
    giveUp: false,
    notification: '{}',
    stack: null,
  });
  expect(await db.query(fail.text, write)).toHaveLength(1);
  expect(await db.query(fail.text, write)).toEqual([]);
  const page = await pageOf(id);
  expect(page.attempts.map((a) => [a.attempt, a.outcome, a.error])).toEqual([
    [1, 'failed', 'written twice'],
  ]);
  expect(page.job.state).toBe('failed');
  openGate(id);
});

it('lists an attempt cancelled while it ran, then the one a retry from outside completed', async () => {
  const { id } = await server.queue.addJob({
    task: 'gated',
    maxRetries: 0,
    uniqueKey: 'cancel-then-retry',
  });
  await waitFor('the attempt to start', () => started.has(id));
  await server.queue.cancelJob(id);
  await waitFor(
    'the job to be cancelled',
    async () => (await server.queue.getJob(id))?.state === 'cancelled',
  );
  // The gate stays open: the next run completes at once.
  openGate(id);
  // Found by the key its history kept (the queue freed it at the claim).
  expect(await server.queue.retryJobs({ state: 'cancelled', uniqueKey: 'cancel-then-retry' })).toBe(
    1,
  );
  await waitFor(
    'the retry to complete',
    async () => (await server.queue.getJob(id))?.state === 'completed',
  );
  const page = await pageOf(id);
  expect(page.attempts.map((a) => [a.attempt, a.outcome, a.error])).toEqual([
    [1, 'cancelled', null],
  ]);
  expect(page.history).toMatchObject({ attempt: 2, state: 'completed' });
});
