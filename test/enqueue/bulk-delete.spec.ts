import pg from 'pg';
import { InvalidJobFilterError } from 'nestjs-pg-jobs';
import { FlakyTask } from '../support/flaky-task.js';
import { startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { withDeadline } from '../support/deadline.js';

const db = useTestDatabase();
let app: HttpJobsApp;

beforeAll(async () => {
  app = await startHttpJobsApp(db.url, {
    tasks: [FlakyTask],
    // A failed attempt with a retry left waits an hour for it: it stays pending through the tests.
    options: { concurrency: 4, pollingCheck: 0.1, retryBackoff: 3600, allowUnknownTasks: true },
  });
});
afterAll(() => app?.close());

afterEach(async () => {
  await app.queue.cancelJobs();
  for (const table of [
    'jobHistory',
    'jobStep',
    'jobAttempt',
    'jobDependency',
    'jobFlowMember',
    'jobFlow',
  ]) {
    await db.query(`DELETE FROM jobs."${table}"`);
  }
});

const stateOf = async (id: string) => (await app.queue.getJob(id))?.state;
const endedAs = (id: string, state: string) =>
  waitFor(`job ${id} to be ${state}`, async () => (await stateOf(id)) === state);

/** Jobs of a task nobody runs, straight into history: one per state given, ended a minute ago. */
async function inHistory(
  task: string,
  states: readonly string[],
  error: string | null = null,
): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt",
                                    "completedAt", "lastErrorMessage")
     SELECT gen_random_uuid(), $1, s, 1, 0, now() - interval '2 minutes',
            CASE WHEN s = 'skipped' THEN NULL ELSE now() - interval '2 minutes' END,
            CASE WHEN s = 'active' THEN NULL ELSE now() - interval '1 minute' END, $3
     FROM unnest($2::text[]) WITH ORDINALITY AS u(s, n) ORDER BY n
     RETURNING id`,
    [task, states, error],
  );
  return rows.map((row) => row.id);
}

/** A checkpoint and a failed attempt of job `id`, as durable steps and a failure leave them. */
async function sideRecords(id: string): Promise<void> {
  await db.query(
    `INSERT INTO jobs."jobStep" ("jobId", name, position, state, "startedAt", attempt)
     VALUES ($1, 'fetch', 0, 'completed', now(), 1)`,
    [id],
  );
  await db.query(
    `INSERT INTO jobs."jobAttempt" ("jobId", "startedAt", attempt, outcome, "endedAt", error)
     VALUES ($1, now(), 1, 'failed', now(), 'boom') ON CONFLICT DO NOTHING`,
    [id],
  );
}

const sideRecordsOf = async (ids: readonly string[]) =>
  (
    await db.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM jobs."jobStep" WHERE "jobId" = ANY($1::uuid[]))::int
            + (SELECT count(*) FROM jobs."jobAttempt" WHERE "jobId" = ANY($1::uuid[]))::int AS n`,
      [ids],
    )
  )[0].n;

const historyCount = async (task: string) =>
  (
    await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs."jobHistory" WHERE task = $1`,
      [task],
    )
  )[0].n;

describe('deleteJobs', () => {
  it('deletes the ended jobs the task, state and error text take, with their steps and attempts, and leaves the others', async () => {
    const [completed, skipped, cancelled] = await inHistory('report', [
      'completed',
      'skipped',
      'cancelled',
    ]);
    const [diskFull] = await inHistory('report', ['failed'], 'disk full on /var');
    const [onFire] = await inHistory('report', ['failed'], 'the printer is on fire');
    const [running] = await inHistory('report', ['active']);
    const [otherTask] = await inHistory('invoice', ['completed']);
    for (const id of [completed, diskFull, otherTask]) await sideRecords(id);

    expect(await app.queue.deleteJobs({ task: 'report', state: 'failed', error: 'DISK' })).toBe(1);
    expect(await app.queue.getJob(diskFull)).toBeNull();
    expect(await stateOf(onFire)).toBe('failed');
    expect(await sideRecordsOf([diskFull])).toBe(0);

    // Every ended state by default; a running job has not ended, another task is not asked for.
    expect(await app.queue.deleteJobs({ task: 'report' })).toBe(4);
    for (const id of [completed, skipped, cancelled, onFire]) {
      expect(await app.queue.getJob(id)).toBeNull();
    }
    expect(await sideRecordsOf([completed])).toBe(0);
    expect(await stateOf(running)).toBe('active');
    expect(await stateOf(otherTask)).toBe('completed');
    expect(await sideRecordsOf([otherTask])).toBe(2);
    expect(await app.queue.deleteJobs({ task: 'report' })).toBe(0);
  });

  it('leaves a failed job whose retry is pending, and deletes the attempt log of one that failed for good', async () => {
    const { id: retrying } = await app.queue.addJob({
      task: 'flaky',
      payload: { failUntilAttempt: 1, message: 'disk full' },
      maxRetries: 1,
    });
    const { id: failed } = await app.queue.addJob({
      task: 'flaky',
      payload: { failUntilAttempt: 1, message: 'disk full' },
      maxRetries: 0,
    });
    await endedAs(failed, 'failed');
    await waitFor('the first attempt of the retried job to fail', async () => {
      const job = await app.queue.getJob(retrying);
      return job?.state === 'pending' && job.attempt === 1;
    });
    // Its history row says failed: what the delete must not take.
    expect((await db.historyOf(retrying))?.state).toBe('failed');
    expect(await sideRecordsOf([retrying, failed])).toBe(2);

    expect(await app.queue.deleteJobs({ task: 'flaky', state: 'failed', error: 'disk' })).toBe(1);
    expect(await app.queue.getJob(failed)).toBeNull();
    expect(await app.queue.getJob(retrying)).toMatchObject({
      state: 'pending',
      attempt: 1,
      lastErrorMessage: 'disk full',
    });
    expect(await sideRecordsOf([failed])).toBe(0);
    expect(await sideRecordsOf([retrying])).toBe(1);
  });

  it('leaves the jobs of a flow, which go with their flow', async () => {
    const flow = await app.queue.addFlow({
      jobs: [
        { ref: 'a', task: 'flaky' },
        { ref: 'b', task: 'flaky', dependsOn: ['a'] },
      ],
    });
    const { id: alone } = await app.queue.addJob({ task: 'flaky' });
    await endedAs(flow.jobs.b, 'completed');
    await endedAs(alone, 'completed');

    expect(await app.queue.deleteJobs({ task: 'flaky' })).toBe(1);
    expect(await app.queue.getJob(alone)).toBeNull();
    const info = await app.queue.getFlow(flow.flowId);
    expect(info?.jobs.map((job) => [job.ref, job.state])).toEqual([
      ['a', 'completed'],
      ['b', 'completed'],
    ]);
  });

  it('goes through any number of jobs in batches of 1000, and counts them all', async () => {
    await db.query(
      `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "completedAt")
       SELECT gen_random_uuid(), 'nobody', (ARRAY['completed', 'failed', 'cancelled'])[1 + i % 3], 1, 0,
              now(), now() - interval '1 minute'
       FROM generate_series(1, 2500) AS i`,
    );
    const [kept] = await inHistory('somebody', ['completed']);
    expect(await app.queue.deleteJobs({ task: 'nobody' })).toBe(2500);
    expect(await historyCount('nobody')).toBe(0);
    expect(await stateOf(kept)).toBe('completed');
  });

  it('leaves, without waiting, a job another transaction holds (a retry queuing it again)', async () => {
    const [held, free] = await inHistory('report', ['failed', 'failed']);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SELECT 1 FROM jobs."jobHistory" WHERE id = $1 FOR UPDATE`, [held]);
      const deleted = withDeadline(app.queue.deleteJobs({ task: 'report' }), 5000, () => {
        throw new Error('deleteJobs waited for the lock');
      });
      expect(await deleted).toBe(1);
      await client.query('ROLLBACK');
    } finally {
      await client.end();
    }
    expect(await app.queue.getJob(free)).toBeNull();
    expect(await stateOf(held)).toBe('failed');
  });

  it.each([
    ['pending', 'pending'],
    ['active', 'active'],
    ['blocked', 'blocked'],
    ['suspended', 'suspended'],
    ['snoozed', 'snoozed'],
    ['an ended state with one that has not ended', ['completed', 'pending']],
    ['no state', []],
  ])('refuses %s with InvalidJobFilterError, and deletes nothing', async (_, state) => {
    const [completed] = await inHistory('report', ['completed']);
    const { id: pending } = await app.queue.addJob({
      task: 'flaky',
      waitUntil: new Date(Date.now() + 3600_000),
    });
    const deleting = app.queue.deleteJobs({ state: state as never });
    await expect(deleting).rejects.toThrow(InvalidJobFilterError);
    await expect(deleting).rejects.toThrow(
      /"state" must be one of completed, failed, interrupted, cancelled, skipped, or an array of them \(a job that has not ended is cancelled first: cancelJobs\)/,
    );
    await expect(deleting).rejects.toThrow('Nothing was changed.');
    expect(await stateOf(completed)).toBe('completed');
    expect(await stateOf(pending)).toBe('pending');
  });
});
