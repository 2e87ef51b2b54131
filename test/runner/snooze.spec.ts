import { Injectable } from '@nestjs/common';
import { JobEventsService, JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobSnoozedEvent, JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { startWorkerApp } from '../support/worker-fixtures.js';

const db = useTestDatabase();

/** The attempt number each run of a job saw, by job id. */
const runs = new Map<string, number[]>();

/**
 * Snoozes for `seconds` on its first run (returning the snooze, or throwing it), and returns on the
 * next; `seconds` may be what `ctx.snooze` refuses.
 */
@JobTask('nap')
@Injectable()
class NapTask implements JobTaskHandler<{ seconds: number; how: 'return' | 'throw' }, string> {
  run(payload: { seconds: number; how: 'return' | 'throw' }, ctx: JobContext) {
    const seen = [...(runs.get(ctx.id) ?? []), ctx.attempt];
    runs.set(ctx.id, seen);
    if (seen.length > 1) return `awake after ${seen.length - 1} snooze(s)`;
    const snooze = ctx.snooze(payload.seconds);
    if (payload.how === 'throw') throw snooze;
    return snooze;
  }
}

let app: JobsApp;
const snoozes: JobSnoozedEvent[] = [];

beforeAll(async () => {
  app = await startJobsApp(db.url, { tasks: [NapTask], options: { pollingCheck: 0.1 } });
  app.module
    .get(JobEventsService)
    .on('snoozed')
    .subscribe((event) => snoozes.push(event));
});

it('queues a snoozed job again after its seconds, with its attempt unconsumed and no failure', async () => {
  // No retries at all: a snooze that consumed the attempt would leave the job nothing to run on.
  const { id, promise } = await app.queue.addJob<string>({
    task: 'nap',
    payload: { seconds: 3600, how: 'return' },
    maxRetries: 0,
    promise: true,
  });
  await waitFor('the snooze', async () => (await db.historyOf(id))?.state === 'snoozed');
  expect(await db.historyOf(id)).toMatchObject({
    state: 'snoozed',
    attempt: 1,
    lastErrorMessage: null,
  });
  const [queued] = await db.query<{ delay: number; retries: number }>(
    `SELECT extract(epoch FROM j."waitUntil" - h."updatedAt")::float8 AS delay, j.retries
     FROM jobs.jobs j JOIN jobs."jobHistory" h USING (id) WHERE j.id = $1`,
    [id],
  );
  expect(queued).toEqual({ delay: 3600, retries: 0 });
  expect(await app.queue.getJob(id)).toMatchObject({ state: 'pending', attempt: 0 });
  expect(snoozes.find((event) => event.id === id)).toMatchObject({ attempt: 1, seconds: 3600 });

  // An hour later, as far as the queue can tell.
  await db.query(`UPDATE jobs.jobs SET "waitUntil" = now() WHERE id = $1`, [id]);
  await expect(promise).resolves.toBe('awake after 1 snooze(s)');
  expect(runs.get(id)).toEqual([1, 1]);
  expect(await db.historyOf(id)).toMatchObject({
    state: 'completed',
    attempt: 1,
    lastErrorMessage: null,
  });
});

it('snoozes a task that throws what ctx.snooze returns, and runs it again once due', async () => {
  const { id, promise } = await app.queue.addJob<string>({
    task: 'nap',
    payload: { seconds: 0.2, how: 'throw' },
    promise: true,
  });
  await expect(promise).resolves.toBe('awake after 1 snooze(s)');
  expect(runs.get(id)).toEqual([1, 1]);
  expect(snoozes.filter((event) => event.id === id)).toHaveLength(1);
});

it.each([
  [-1, '-1'],
  ['5', '"5"'],
  [4e9, '4000000000'],
])(
  'fails the attempt of a task that snoozes for %p seconds, saying what it takes',
  async (seconds, shown) => {
    const { id } = await app.queue.addJob({
      task: 'nap',
      payload: { seconds, how: 'return' },
      maxRetries: 0,
    });
    const history = await waitFor('the failure', async () => {
      const row = await db.historyOf(id);
      return row?.state === 'failed' && row;
    });
    expect(history.lastErrorMessage).toBe(
      `ctx.snooze() takes a number of seconds from 0 to 3155760000; got ${shown}.`,
    );
  },
);

describe('a worker task', () => {
  let workerApp: JobsApp;
  const workerSnoozes: JobSnoozedEvent[] = [];

  beforeAll(async () => {
    // One thread: the task remembers in it which jobs it has snoozed already.
    workerApp = await startWorkerApp(db.url, { schema: 'worker_snooze', workers: 1 });
    workerApp.module
      .get(JobEventsService)
      .on('snoozed')
      .subscribe((event) => workerSnoozes.push(event));
  }, 60_000);

  it('snoozes from its thread, and runs again with the same attempt', async () => {
    const { id, promise } = await workerApp.queue.addJob<string>({
      task: 'worker.snoozeOnce',
      payload: { seconds: 0.2 },
      maxRetries: 0,
      promise: true,
    });
    await expect(promise).resolves.toBe('awake on attempt 1');
    expect(workerSnoozes.filter((event) => event.id === id)).toEqual([
      expect.objectContaining({ attempt: 1, seconds: 0.2 }),
    ]);
  }, 30_000);
});
