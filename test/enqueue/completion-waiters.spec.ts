import {
  JobCancelledError,
  JobFailedError,
  JobPromiseTimeoutError,
  JobsShutdownError,
} from 'nestjs-pg-jobs';
import type { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import type { ResolvedJobsOptions } from '../../libs/jobs/src/options/resolved-options.js';
import { CompletionWaiters } from '../../libs/jobs/src/job-queue/completion-waiters.js';
import type { NotificationListener } from '../../libs/jobs/src/notify/notification-listener.js';
import type { JobEnding } from '../../libs/jobs/src/job-queue/completion-waiters.js';

/**
 * The waiters of one instance, without a database: history is a map of the endings the test
 * writes, and each catch-up query is recorded with the ids it asked about.
 */
function setup() {
  const history = new Map<string, JobEnding>();
  const asked: string[][] = [];
  const db = {
    schema: toSchemaName('jobs'),
    query: async (_sql: string, [ids]: [string[]]) => {
      asked.push(ids);
      return ids.flatMap((id) => history.get(id) ?? []);
    },
  };
  const options = { promiseTimeout: 60, pollingCheck: 60 };
  // No LISTEN session: the tests settle by hand what a notification would.
  const listener = { on: () => undefined, onConnected: () => undefined };
  const waiters = new CompletionWaiters(
    options as unknown as ResolvedJobsOptions,
    db as unknown as JobsDatabase,
    listener as unknown as NotificationListener,
  );
  return { waiters, history, asked };
}

/** Settles within the turns a test takes, or says it did not. */
const outcome = (promise: Promise<unknown>) =>
  Promise.race([
    promise.then(
      (value) => ({ resolved: value }),
      (err: unknown) => ({ rejected: err }),
    ),
    new Promise((resolve) => setImmediate(() => setImmediate(() => resolve('unsettled')))),
  ]);

let waiters: CompletionWaiters;
afterEach(() => waiters?.stop());

it("resolves every waiter of a job with its completion's result, once", async () => {
  const s = setup();
  waiters = s.waiters;
  const one = waiters.wait('a');
  const two = waiters.wait('a');
  const other = waiters.wait('b');
  waiters.settle({ id: 'a', state: 'completed', result: '{"sent":3}' });
  await expect(one.promise).resolves.toEqual({ sent: 3 });
  await expect(two.promise).resolves.toEqual({ sent: 3 });
  expect(waiters.size).toBe(1);
  // The same end heard again, by another route: harmless.
  waiters.settle({ id: 'a', state: 'completed', result: '{"sent":4}' });
  waiters.settle({ id: 'b', state: 'completed', result: null });
  await expect(other.promise).resolves.toBeUndefined();
  expect(s.asked).toEqual([]);
});

it('rejects the waiters of a failed job with its error, and of a cancelled one as cancelled', async () => {
  waiters = setup().waiters;
  const failed = waiters.wait('a');
  const cancelled = waiters.wait('b');
  waiters.settle({ id: 'a', state: 'failed', error: 'the printer is on fire' });
  waiters.settle({ id: 'b', state: 'cancelled' });
  await expect(failed.promise).rejects.toThrow(JobFailedError);
  await expect(failed.promise).rejects.toMatchObject({
    jobId: 'a',
    state: 'failed',
    message: 'the printer is on fire',
  });
  await expect(cancelled.promise).rejects.toThrow(JobCancelledError);
  expect(waiters.size).toBe(0);
});

it('reads the results of completions heard without them in one query per turn', async () => {
  const s = setup();
  waiters = s.waiters;
  const a = waiters.wait('a');
  const b = waiters.wait('b');
  s.history.set('a', { id: 'a', state: 'completed', result: '"done"' });
  s.history.set('b', { id: 'b', state: 'completed', result: null });
  // A notification carries no result.
  waiters.settle({ id: 'a', state: 'completed' });
  waiters.settle({ id: 'b', state: 'completed' });
  expect(await outcome(a.promise)).toEqual({ resolved: 'done' });
  expect(await outcome(b.promise)).toEqual({ resolved: undefined });
  // A turn later, still the one query.
  await new Promise((resolve) => setImmediate(resolve));
  expect(s.asked).toEqual([['a', 'b']]);
});

it("catches up on the ends no notification told of: only the waited jobs', only if any", async () => {
  const s = setup();
  waiters = s.waiters;
  await waiters.catchUp();
  expect(s.asked).toEqual([]);
  const ended = waiters.wait('ended');
  const running = waiters.wait('running');
  s.history.set('ended', { id: 'ended', state: 'failed', error: 'boom' });
  await waiters.catchUp();
  expect(s.asked).toEqual([['ended', 'running']]);
  await expect(ended.promise).rejects.toThrow('boom');
  expect(await outcome(running.promise)).toBe('unsettled');
  expect(waiters.size).toBe(1);
});

it('gives up after the timeout, saying which setting set it, and forgets the waiter', async () => {
  waiters = setup().waiters;
  const wait = waiters.wait('slow', { seconds: 0.01, setBy: 'waitForJob' });
  await expect(wait.promise).rejects.toThrow(JobPromiseTimeoutError);
  await expect(wait.promise).rejects.toThrow(/waitForJob/);
  expect(waiters.size).toBe(0);
});

it('leaves a forgotten wait unsettled and the others of its job waiting', async () => {
  waiters = setup().waiters;
  const forgotten = waiters.wait('a');
  const kept = waiters.wait('a');
  forgotten.forget();
  expect(waiters.size).toBe(1);
  waiters.settle({ id: 'a', state: 'completed', result: '1' });
  await expect(kept.promise).resolves.toBe(1);
  expect(await outcome(forgotten.promise)).toBe('unsettled');
  const alone = waiters.wait('b');
  alone.forget();
  expect(waiters.size).toBe(0);
});

it('rejects every waiter at shutdown', async () => {
  waiters = setup().waiters;
  const a = waiters.wait('a');
  const b = waiters.wait('b');
  await waiters.stop();
  await expect(a.promise).rejects.toThrow(JobsShutdownError);
  await expect(b.promise).rejects.toThrow(JobsShutdownError);
  expect(waiters.size).toBe(0);
});
