import { fileURLToPath } from 'node:url';
import { jest } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import type { Type } from '@nestjs/common';
import {
  InvalidJobTaskOptionError,
  JobEventsService,
  JobFailedError,
  JobTask,
  JobsMetricsModule,
  JobsMetricsService,
  UnrecoverableJobError,
  WorkerPoolBootError,
} from 'nestjs-pg-jobs';
import type { JobContext, JobFailedEvent, JobTaskHandler, JobTaskOptions } from 'nestjs-pg-jobs';
import { startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { quietLogger, startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { parsePrometheusText } from '../support/prometheus-text.js';
import { useTestDatabase } from '../support/test-database.js';
import { startWorkerApp, THREAD_LOADER_EXEC_ARGV } from '../support/worker-fixtures.js';

const db = useTestDatabase();

@JobTask('hopeless')
@Injectable()
class HopelessTask implements JobTaskHandler<{ message: string }> {
  run(payload: { message: string }): never {
    throw new UnrecoverableJobError(payload.message);
  }
}

/** What `PacedTask`'s backoff answers, by the message of the error it is asked about. */
const ANSWERS: Record<string, () => unknown> = {
  hour: () => 3600,
  now: () => 0,
  giveUp: () => 'giveUp',
  negative: () => -5,
  words: () => 'in a minute',
  throws: () => {
    throw new Error('the backoff broke');
  },
};
const asked: { attempt: number; error: unknown }[] = [];

/** Always fails, with its payload's `answer` as the message; its backoff answers from `ANSWERS`. */
@JobTask({
  name: 'paced',
  backoff: (attempt, error) => {
    asked.push({ attempt, error });
    return ANSWERS[error.message]() as number;
  },
})
@Injectable()
class PacedTask implements JobTaskHandler<{ answer: string }> {
  run(payload: { answer: string }): never {
    throw new Error(payload.answer);
  }
}

/** Snoozes for an hour: what the snooze metric counts. */
@JobTask('napOnce')
@Injectable()
class NapOnceTask implements JobTaskHandler {
  run(_payload: unknown, ctx: JobContext) {
    return ctx.snooze(3600);
  }
}

const RETRY_BACKOFF = 120;
let server: HttpJobsApp;
const failures: JobFailedEvent[] = [];

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsMetricsModule.forRoot({ path: 'metrics' })],
    tasks: [HopelessTask, PacedTask, NapOnceTask],
    options: { pollingCheck: 0.1, retryBackoff: RETRY_BACKOFF, maxRetries: 5 },
  });
  server.app
    .get(JobEventsService)
    .on('failed')
    .subscribe((event) => failures.push(event));
});
afterAll(() => server?.close());

const history = async (id: string) =>
  (
    await db.query<{ state: string; attempt: number; lastErrorMessage: string }>(
      `SELECT state, attempt, "lastErrorMessage" FROM jobs."jobHistory" WHERE id = $1`,
      [id],
    )
  )[0];

/** Seconds the job waits before its next attempt: both ends are the failure statement's now(). */
const retryDelay = async (id: string) => {
  const [row] = await db.query<{ delay: number }>(
    `SELECT extract(epoch FROM j."waitUntil" - h."completedAt")::float8 AS delay
     FROM jobs.jobs j JOIN jobs."jobHistory" h USING (id) WHERE j.id = $1`,
    [id],
  );
  return row?.delay;
};

const failedOnce = (id: string) =>
  waitFor(`job ${id} to fail its first attempt`, async () => {
    const row = await history(id);
    return row?.state === 'failed' && row;
  });

it('fails the job at once, retries left or not, when its task throws an UnrecoverableJobError', async () => {
  const { id, promise } = await server.queue.addJob({
    task: 'hopeless',
    payload: { message: 'account 42 was deleted' },
    promise: true,
  });
  await expect(promise).rejects.toThrow(JobFailedError);
  await expect(promise).rejects.toThrow('account 42 was deleted');
  expect(await history(id)).toEqual({
    state: 'failed',
    attempt: 1,
    lastErrorMessage: 'account 42 was deleted',
  });
  expect(await db.query(`SELECT 1 FROM jobs.jobs WHERE id = $1`, [id])).toEqual([]);
  await waitFor('the failed event', () => failures.some((event) => event.id === id));
  expect(failures.find((event) => event.id === id)).toMatchObject({
    willRetry: false,
    gaveUp: true,
  });
});

it("waits the delay a task's backoff returns before the next attempt, asking it with the attempt and error", async () => {
  const { id } = await server.queue.addJob({ task: 'paced', payload: { answer: 'hour' } });
  await failedOnce(id);
  expect(await retryDelay(id)).toBe(3600);
  const question = asked.find(({ error }) => (error as Error).message === 'hour');
  expect(question?.attempt).toBe(1);
  expect(question?.error).toBeInstanceOf(Error);
});

it("fails the job with retries left when its task's backoff answers 'giveUp'", async () => {
  const { id, promise } = await server.queue.addJob({
    task: 'paced',
    payload: { answer: 'giveUp' },
    promise: true,
  });
  await expect(promise).rejects.toThrow('giveUp');
  expect(await history(id)).toMatchObject({ state: 'failed', attempt: 1 });
  await waitFor('the failed event', () => failures.some((event) => event.id === id));
  expect(failures.find((event) => event.id === id)).toMatchObject({ gaveUp: true });
});

it.each([
  ['negative', 'returned -5, neither a number of seconds'],
  ['words', 'returned "in a minute", neither a number of seconds'],
  ['throws', 'threw (the backoff broke)'],
])(
  'falls back to the default backoff, and says so, when the backoff answers %s',
  async (answer, logged) => {
    const warn = jest.spyOn(quietLogger, 'warn');
    try {
      const { id } = await server.queue.addJob({ task: 'paced', payload: { answer } });
      await failedOnce(id);
      expect(await retryDelay(id)).toBe(RETRY_BACKOFF);
      expect(warn.mock.calls.map(([message]) => String(message))).toContainEqual(
        expect.stringContaining(`The backoff of task "paced" for attempt 1 of job ${id} ${logged}`),
      );
    } finally {
      warn.mockRestore();
    }
  },
);

it('does not ask the backoff once no retries are left', async () => {
  const before = asked.length;
  const { id } = await server.queue.addJob({
    task: 'paced',
    payload: { answer: 'now' },
    maxRetries: 0,
  });
  await failedOnce(id);
  expect(asked.length).toBe(before);
});

it('counts give-ups and snoozes in the metrics', async () => {
  const scrape = async () =>
    parsePrometheusText(await server.app.get(JobsMetricsService).metrics());
  const before = await scrape();
  const hopeless = await server.queue.addJob({
    task: 'hopeless',
    payload: { message: 'no' },
    promise: true,
  });
  const pacedOut = await server.queue.addJob({
    task: 'paced',
    payload: { answer: 'giveUp' },
    promise: true,
  });
  const { id } = await server.queue.addJob({ task: 'napOnce' });
  await expect(hopeless.promise).rejects.toThrow(JobFailedError);
  await expect(pacedOut.promise).rejects.toThrow(JobFailedError);
  await waitFor('the snooze', async () => (await history(id))?.state === 'snoozed');
  // The counter moves once the runner has the snooze's write back, which may be after another
  // connection already reads the row it wrote.
  const snoozed = 'nestjs_pg_jobs_snoozed_total{queue="default",task="napOnce"}';
  let after = await scrape();
  const added = (sample: string) => (after.get(sample) ?? 0) - (before.get(sample) ?? 0);
  await waitFor('the snooze counted', async () => {
    after = await scrape();
    return added(snoozed) > 0;
  });
  expect(added('nestjs_pg_jobs_gave_up_total{queue="default",task="hopeless"}')).toBe(1);
  expect(added('nestjs_pg_jobs_gave_up_total{queue="default",task="paced"}')).toBe(1);
  expect(added('nestjs_pg_jobs_failed_total{final="true",queue="default",task="hopeless"}')).toBe(
    1,
  );
  expect(added(snoozed)).toBe(1);
});

describe('the options are checked at boot', () => {
  const bootWith = (options: Partial<JobTaskOptions>) => {
    @JobTask({ name: 'checked', ...options })
    @Injectable()
    class CheckedTask implements JobTaskHandler {
      run(_payload: unknown, _ctx: JobContext): void {}
    }
    return startJobsApp(db.url, { tasks: [CheckedTask as Type] });
  };

  it.each([
    [
      { backoff: 60 },
      '"backoff" on CheckedTask must be a function (attempt, error) => seconds | "giveUp"; got 60.',
    ],
    [{ transactional: 'yes' }, '"transactional" on CheckedTask must be a boolean; got "yes".'],
  ])('%j', async (options, message) => {
    const boot = bootWith(options as unknown as Partial<JobTaskOptions>);
    await expect(boot).rejects.toThrow(InvalidJobTaskOptionError);
    await expect(boot).rejects.toThrow(message);
  });

  it('refuses a transactional worker task, which has no transaction in its thread', async () => {
    const boot = startJobsApp(db.url, {
      options: {
        schema: 'worker_tx',
        workerModule: fileURLToPath(
          new URL('../fixtures/workers/transactional-worker.module.ts', import.meta.url),
        ),
        workerExecArgv: THREAD_LOADER_EXEC_ARGV,
        workers: 1,
      },
    });
    await expect(boot).rejects.toThrow(WorkerPoolBootError);
    await expect(boot).rejects.toThrow(
      '"transactional" on TransactionalWorkerTask cannot be combined with "worker: true"',
    );
  }, 60_000);
});

describe('worker tasks', () => {
  let workerApp: JobsApp;

  beforeAll(async () => {
    workerApp = await startWorkerApp(db.url, {
      schema: 'worker_give_up',
      workers: 1,
      maxRetries: 3,
    });
  }, 60_000);

  it('give up from their thread with an UnrecoverableJobError', async () => {
    const { promise } = await workerApp.queue.addJob({
      task: 'worker.giveUp',
      payload: { message: 'the file is not a PDF' },
      promise: true,
    });
    await expect(promise).rejects.toThrow('the file is not a PDF');
  }, 30_000);

  it('have their backoff asked in their thread', async () => {
    const { id, promise } = await workerApp.queue.addJob({
      task: 'worker.backoff',
      promise: true,
    });
    const [row] = await waitFor('the first attempt to be queued again after its backoff', () =>
      db
        .query<{ delay: number }>(
          `SELECT extract(epoch FROM j."waitUntil" - h."completedAt")::float8 AS delay
         FROM worker_give_up.jobs j JOIN worker_give_up."jobHistory" h USING (id)
         WHERE j.id = $1 AND h.state = 'failed'`,
          [id],
        )
        .then((rows) => rows.length > 0 && rows),
    );
    expect(row.delay).toBe(3600);
    await db.query(`UPDATE worker_give_up.jobs SET "waitUntil" = now() WHERE id = $1`, [id]);
    // Attempt 2: the backoff gives up, with two retries left.
    await expect(promise).rejects.toThrow('attempt 2 failed in a thread');
    expect((await workerApp.queue.getJob(id))?.attempt).toBe(2);
  }, 30_000);
});
