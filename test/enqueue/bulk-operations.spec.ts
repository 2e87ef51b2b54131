import {
  InvalidJobFilterError,
  JobCancelledError,
  JobEventsService,
  JobsMetricsModule,
  JobsMetricsService,
} from 'nestjs-pg-jobs';
import type { JobEvent } from 'nestjs-pg-jobs';
import { FlakyTask } from '../support/flaky-task.js';
import { abortReasons, GatedTask, started } from '../support/gated-task.js';
import { startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import { parsePrometheusText } from '../support/prometheus-text.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let app: HttpJobsApp;
const events: JobEvent[] = [];

beforeAll(async () => {
  app = await startHttpJobsApp(db.url, {
    imports: [JobsMetricsModule.forRoot({ path: false })],
    tasks: [FlakyTask, GatedTask],
    // A failed attempt with a retry left waits an hour for it: it stays pending through the tests.
    options: { concurrency: 4, pollingCheck: 0.1, retryBackoff: 3600, allowUnknownTasks: true },
  });
  app.app.get(JobEventsService).events$.subscribe((event) => events.push(event));
});
afterAll(() => app?.close());

afterEach(async () => {
  await app.queue.cancelJobs();
  await db.query('DELETE FROM jobs."jobHistory"');
  events.length = 0;
});

const stateOf = async (id: string) => (await app.queue.getJob(id))?.state;
const endedAs = (id: string, state: string) =>
  waitFor(`job ${id} to be ${state}`, async () => (await stateOf(id)) === state);
const later = () => new Date(Date.now() + 3600_000);
const typesOf = (type: string) =>
  events.filter((event) => event.type === type).map((event) => event.id);

async function failedFlaky(): Promise<string> {
  const { id } = await app.queue.addJob({
    task: 'flaky',
    payload: { failUntilAttempt: 1, message: 'the printer is on fire' },
    maxRetries: 0,
  });
  await endedAs(id, 'failed');
  return id;
}

/** Jobs of a task nobody runs that failed for good: `count` of them, straight into history. */
async function failedInHistory(count: number): Promise<void> {
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "completedAt")
     SELECT gen_random_uuid(), 'nobody', 'failed', 2, 1, now(), now() - interval '1 minute'
     FROM generate_series(1, $1)`,
    [count],
  );
}

describe('retryJobs', () => {
  it('queues again the jobs that failed for good, for one more attempt, and leaves the others', async () => {
    const failed = [await failedFlaky(), await failedFlaky()];
    const { id: completed } = await app.queue.addJob({ task: 'flaky', maxRetries: 0 });
    await endedAs(completed, 'completed');
    const { id: cancelled } = await app.queue.addJob({ task: 'flaky', waitUntil: later() });
    await app.queue.cancelJob(cancelled);
    // Failed once, with a retry left: pending, not failed.
    const { id: retrying } = await app.queue.addJob({
      task: 'flaky',
      payload: { failUntilAttempt: 1 },
      maxRetries: 1,
    });
    await waitFor('its first attempt to fail', async () => {
      const job = await app.queue.getJob(retrying);
      return job?.state === 'pending' && job.attempt === 1;
    });

    expect(await app.queue.retryJobs({ task: 'flaky' })).toBe(2);
    for (const id of failed) {
      await endedAs(id, 'completed');
      expect(await app.queue.getJob(id)).toMatchObject({ attempt: 2, maxRetries: 1 });
    }
    expect(typesOf('retried').sort()).toEqual([...failed].sort());
    expect(await stateOf(cancelled)).toBe('cancelled');
    expect(await app.queue.getJob(retrying)).toMatchObject({ state: 'pending', attempt: 1 });
    expect(await app.queue.retryJobs({ task: 'flaky' })).toBe(0);

    // Cancelled jobs only when asked for.
    expect(await app.queue.retryJobs({ task: 'flaky', state: ['cancelled'] })).toBe(1);
    await endedAs(cancelled, 'completed');
  });

  it('takes only the task, state and creation time asked for', async () => {
    const old = await failedFlaky();
    const recent = await failedFlaky();
    await db.query(
      `UPDATE jobs."jobHistory" SET "createdAt" = now() - interval '1 day' WHERE id = $1`,
      [old],
    );
    await failedInHistory(1);
    expect(await app.queue.retryJobs({ task: 'flaky', state: 'interrupted' })).toBe(0);
    expect(await app.queue.retryJobs({ before: new Date(Date.now() - 3600_000) })).toBe(1);
    await endedAs(old, 'completed');
    expect(await stateOf(recent)).toBe('failed');
    expect(await app.queue.retryJobs({ task: 'flaky' })).toBe(1);
    await endedAs(recent, 'completed');
    expect(await db.query(`SELECT 1 FROM jobs.jobs`)).toEqual([]);
  });

  it('goes through any number of jobs in batches, keeping each attempt counter', async () => {
    await failedInHistory(2500);
    expect(await app.queue.retryJobs({ task: 'nobody' })).toBe(2500);
    const [queued] = await db.query<{ n: number; counters: number[] }>(
      `SELECT count(*)::int AS n, array_agg(DISTINCT retries) AS counters FROM jobs.jobs
       WHERE task = 'nobody' AND "maxRetries" = 2`,
    );
    // Attempt 3 comes next: an attempt number never repeats, it is what fences a stale write.
    expect(queued).toEqual({ n: 2500, counters: [2] });
    expect(await app.queue.cancelJobs({ task: 'nobody', state: 'pending' })).toBe(2500);
    expect(await db.query(`SELECT 1 FROM jobs.jobs`)).toEqual([]);
  });
});

describe('cancelJobs', () => {
  it('cancels the pending and running jobs asked for, aborting those that run', async () => {
    const running = await Promise.all(
      [1, 2].map(() => app.queue.addJob({ task: 'gated', promise: true })),
    );
    for (const { promise } of running) promise!.catch(() => undefined);
    await waitFor('both to start', () => running.every(({ id }) => started.has(id)));
    const pending = await app.queue.addJob({ task: 'gated', waitUntil: later() });
    const other = await app.queue.addJob({ task: 'flaky', waitUntil: later() });

    expect(await app.queue.cancelJobs({ task: 'gated', state: 'pending' })).toBe(1);
    expect(await stateOf(running[0].id)).toBe('active');
    expect(await app.queue.cancelJobs({ task: 'gated' })).toBe(2);
    for (const { id, promise } of running) {
      await expect(promise).rejects.toThrow(JobCancelledError);
      await waitFor(`job ${id}'s signal to abort`, () => abortReasons.has(id));
      expect(await stateOf(id)).toBe('cancelled');
    }
    expect(await stateOf(pending.id)).toBe('cancelled');
    expect(await stateOf(other.id)).toBe('pending');
    expect(typesOf('cancelled').sort()).toEqual(
      [pending.id, ...running.map(({ id }) => id)].sort(),
    );
  });

  it('takes only the jobs enqueued before `before`', async () => {
    const old = await app.queue.addJob({ task: 'flaky', waitUntil: later() });
    const recent = await app.queue.addJob({ task: 'flaky', waitUntil: later() });
    await db.query(`UPDATE jobs.jobs SET "createdAt" = now() - interval '1 day' WHERE id = $1`, [
      old.id,
    ]);
    expect(await app.queue.cancelJobs({ before: new Date(Date.now() - 3600_000) })).toBe(1);
    expect(await stateOf(old.id)).toBe('cancelled');
    expect(await stateOf(recent.id)).toBe('pending');
  });
});

it("takes only the jobs of the filter's queue", async () => {
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "completedAt", queue)
     SELECT gen_random_uuid(), 'nobody', 'failed', 1, 0, now(), now() - interval '1 minute', q
     FROM unnest(ARRAY['emails', 'emails', 'default']) AS q`,
  );
  const queued = async () =>
    (
      await db.query<{ queue: string }>(
        `SELECT queue FROM jobs.jobs WHERE task = 'nobody' ORDER BY queue`,
      )
    ).map((row) => row.queue);
  expect(await app.queue.retryJobs({ queue: 'emails' })).toBe(2);
  // Queued again in the queue they ran in.
  expect(await queued()).toEqual(['emails', 'emails']);
  expect(await app.queue.cancelJobs({ queue: 'default', task: 'nobody' })).toBe(0);
  expect(await app.queue.cancelJobs({ queue: 'emails' })).toBe(2);
  expect(await queued()).toEqual([]);
});

it('takes only the jobs whose last error contains the text, in any case, % and _ as plain characters', async () => {
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "completedAt", "lastErrorMessage")
     SELECT gen_random_uuid(), 'nobody', 'failed', 1, 0, now(), now() - interval '1 minute', e
     FROM unnest(ARRAY['connect ECONNREFUSED 10.0.0.1:5432', 'Connect econnrefused',
                       'disk 100% full', 'disk 1000 full', 'bad_key', 'badkey']) AS e`,
  );
  const retriedErrors = async () =>
    (
      await db.query<{ error: string }>(
        `SELECT h."lastErrorMessage" AS error FROM jobs.jobs j JOIN jobs."jobHistory" h ON h.id = j.id
         ORDER BY 1`,
      )
    ).map((row) => row.error);
  expect(await app.queue.retryJobs({ error: 'ECONNrefused' })).toBe(2);
  expect(await app.queue.retryJobs({ error: '100%' })).toBe(1);
  expect(await app.queue.retryJobs({ error: 'd_k' })).toBe(1);
  expect(await retriedErrors()).toEqual([
    'Connect econnrefused',
    'bad_key',
    'connect ECONNREFUSED 10.0.0.1:5432',
    'disk 100% full',
  ]);
  // A queued job's error is its previous attempt's.
  expect(await app.queue.cancelJobs({ error: 'econnrefused', state: 'pending' })).toBe(2);
  expect(await retriedErrors()).toEqual(['bad_key', 'disk 100% full']);
});

it('takes only the jobs of the group, and those enqueued from `after` on', async () => {
  const grouped = await app.queue.addJob({
    task: 'flaky',
    waitUntil: later(),
    groupKey: 'tenant-7',
  });
  const other = await app.queue.addJob({ task: 'flaky', waitUntil: later(), groupKey: 'tenant-8' });
  const old = await app.queue.addJob({ task: 'flaky', waitUntil: later() });
  await db.query(`UPDATE jobs.jobs SET "createdAt" = now() - interval '1 day' WHERE id = $1`, [
    old.id,
  ]);
  expect(await app.queue.cancelJobs({ groupKey: 'tenant-7' })).toBe(1);
  expect(await app.queue.cancelJobs({ after: new Date(Date.now() - 3600_000) })).toBe(1);
  expect(await stateOf(grouped.id)).toBe('cancelled');
  expect(await stateOf(other.id)).toBe('cancelled');
  expect(await stateOf(old.id)).toBe('pending');
});

it('counts the jobs each instance cancelled and retried', async () => {
  const counts = async () => {
    const metrics = parsePrometheusText(await app.app.get(JobsMetricsService).metrics());
    return ['retried', 'cancelled'].map(
      (what) => metrics.get(`nestjs_pg_jobs_${what}_total{queue="default",task="flaky"}`) ?? 0,
    );
  };
  const [retriedBefore, cancelledBefore] = await counts();
  const failed = await failedFlaky();
  await app.queue.retryJobs({ task: 'flaky' });
  await endedAs(failed, 'completed');
  const queued = await Promise.all(
    [1, 2].map(() => app.queue.addJob({ task: 'flaky', waitUntil: later() })),
  );
  await app.queue.cancelJob(queued[0].id);
  await app.queue.cancelJobs({ task: 'flaky' });
  expect(await counts()).toEqual([retriedBefore + 1, cancelledBefore + 2]);
});

it.each([
  ['retryJobs', { state: 'completed' }, /"state" must be one of failed, interrupted, cancelled/],
  ['retryJobs', { state: [] }, /"state" must be one of/],
  ['cancelJobs', { state: 'failed' }, /"state" must be one of blocked, pending, suspended, active/],
  ['cancelJobs', { task: '' }, /"task" must be a non-empty string/],
  ['cancelJobs', { before: 'yesterday' }, /"before" must be a valid Date; got "yesterday"/],
  ['cancelJobs', { queue: '' }, /"queue" must be a non-empty string/],
  ['cancelJobs', { tenant: 'a' }, /"tenant" is not an option/],
  ['cancelJobs', { groupKey: 7 }, /"groupKey" must be a non-empty string/],
  ['retryJobs', { error: '' }, /"error" must be text of 1 to 200 characters/],
  ['retryJobs', { error: 'x'.repeat(201) }, /"error" must be text of 1 to 200 characters/],
  ['retryJobs', { error: 'a\0b' }, /"error" must be text of 1 to 200 characters/],
  ['retryJobs', { after: new Date(NaN) }, /"after" must be a valid Date/],
  ['retryJobs', 'failed', /"\(options\)" must be an object/],
] as const)(
  '%s throws InvalidJobFilterError for %j, and changes nothing',
  async (call, filter, message) => {
    const { id } = await app.queue.addJob({ task: 'flaky', waitUntil: later() });
    const calling = app.queue[call](filter as never);
    await expect(calling).rejects.toThrow(InvalidJobFilterError);
    await expect(calling).rejects.toThrow(message);
    await expect(calling).rejects.toThrow('Nothing was changed.');
    expect(await stateOf(id)).toBe('pending');
  },
);
