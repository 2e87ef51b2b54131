import { Injectable } from '@nestjs/common';
import { JobTask, JobTimeoutError } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const abortReasons = new Map<string, unknown>();

/** Waits for its signal, and records why it was aborted. */
@JobTask({ name: 'heedsSignal', timeout: 0.3, maxRetries: 0 })
@Injectable()
class HeedsSignalTask implements JobTaskHandler {
  async run(_payload: unknown, ctx: JobContext): Promise<void> {
    await new Promise<void>((resolve) =>
      ctx.signal.addEventListener('abort', () => {
        abortReasons.set(ctx.id, ctx.signal.reason);
        resolve();
      }),
    );
  }
}

/** Never settles and never looks at its signal. */
@JobTask({ name: 'ignoresSignal', timeout: 0.3, maxRetries: 1 })
@Injectable()
class IgnoresSignalTask implements JobTaskHandler {
  run(): Promise<void> {
    return new Promise<void>(() => undefined);
  }
}

/** Finishes at once. */
@JobTask('quick')
@Injectable()
class QuickTask implements JobTaskHandler {
  run(): void {}
}

let app: JobsApp;
beforeAll(async () => {
  app = await startJobsApp(db.url, {
    tasks: [HeedsSignalTask, IgnoresSignalTask, QuickTask],
    options: { concurrency: 4, retryBackoff: 0, pollingCheck: 0.1 },
  });
});
afterAll(() => app?.close());

const TIMEOUT_MESSAGE = new JobTimeoutError(0.3).message;

it("aborts ctx.signal at the task's timeout, with the timeout as its reason, and fails the attempt", async () => {
  const { id, promise } = await app.queue.addJob({ task: 'heedsSignal', promise: true });
  await expect(promise).rejects.toThrow(TIMEOUT_MESSAGE);
  expect(abortReasons.get(id)).toBeInstanceOf(JobTimeoutError);
  expect(await app.queue.getJob(id)).toMatchObject({
    state: 'failed',
    attempt: 1,
    lastErrorMessage: TIMEOUT_MESSAGE,
  });
});

it('ends an attempt at its timeout even when the task ignores its signal, and retries it', async () => {
  const { id, promise } = await app.queue.addJob({ task: 'ignoresSignal', promise: true });
  await expect(promise).rejects.toThrow(TIMEOUT_MESSAGE);
  expect(await app.queue.getJob(id)).toMatchObject({
    state: 'failed',
    attempt: 2,
    lastErrorMessage: TIMEOUT_MESSAGE,
  });
  // The two hung attempts keep two of the four slots until they settle: the others still run jobs.
  await (
    await app.queue.addJob({ task: 'quick', promise: true })
  ).promise;
});
