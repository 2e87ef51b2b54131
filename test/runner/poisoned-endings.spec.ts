import { Injectable } from '@nestjs/common';
import { JobFailedError, JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { quietLogger, startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { notSettledWithin, withDeadline } from '../support/deadline.js';

const db = useTestDatabase();

/** 2,000 emoji: 2,000 characters, 8,000 bytes of UTF-8, more than a NOTIFY payload may hold. */
const EMOJI_MESSAGE = '\u{1F600}'.repeat(2_000);

type Poison =
  | 'none'
  | 'nulResult'
  | 'halfEmojiResult'
  | 'nulError'
  | 'emojiError'
  | 'emojiOnce'
  | 'refusedResult'
  | 'refusedError';

/** Ends as its payload says: healthy, or with what PostgreSQL refuses to store or to notify. */
@JobTask({ name: 'poisoned', backoff: () => 0 })
@Injectable()
class PoisonedTask implements JobTaskHandler<{ poison: Poison }, string> {
  run({ poison }: { poison: Poison }, ctx: JobContext): string {
    switch (poison) {
      case 'nulResult':
        return 'a\u0000b';
      case 'halfEmojiResult':
        // What slicing a string in the middle of an emoji leaves.
        return 'cut: \u{1F600}'.slice(0, 6);
      case 'nulError':
        throw new Error('bad\u0000byte');
      case 'emojiError':
        throw new Error(EMOJI_MESSAGE);
      case 'emojiOnce':
        if (ctx.attempt === 1) throw new Error(EMOJI_MESSAGE);
        return 'ok';
      case 'refusedResult':
        return 'refused';
      case 'refusedError':
        throw new Error('unwritable');
      case 'none':
        return 'ok';
    }
  }
}

let enqueuer: JobsApp;

/** What the instances logged as errors. */
const errors: string[] = [];
const logError = quietLogger.error;
quietLogger.error = (message: unknown, context?: unknown) => {
  errors.push(String(message));
  return logError(message, context);
};

beforeAll(async () => {
  enqueuer = await startJobsApp(db.url, {
    tasks: [PoisonedTask],
    options: { runJobs: false, pollingCheck: 0.5 },
  });
});

const statesOf = async (ids: readonly string[]) =>
  db.query<{ id: string; state: string; lastErrorMessage: string | null }>(
    `SELECT id, state, "lastErrorMessage" FROM jobs."jobHistory" WHERE id = ANY($1::uuid[])`,
    [ids],
  );

/** An instance that runs jobs, with room for a whole claim of them in one batch. */
const startRunner = () =>
  startJobsApp(db.url, {
    tasks: [PoisonedTask],
    options: { concurrency: 10, pollingCheck: 0.2 },
  });

/** Starts a runner and waits until none of `ids` is left `active`. */
async function runUntilEnded(ids: readonly string[]) {
  const runner = await startRunner();
  await waitFor(
    'every job to end',
    async () => (await statesOf(ids)).every((row) => row.state !== 'active') || undefined,
    20_000,
  );
  return runner;
}

const settled = (promises: readonly Promise<unknown>[], ms: number) =>
  withDeadline(Promise.allSettled(promises), ms, notSettledWithin('the promises', ms));

it('ends every job of a claim in which some endings PostgreSQL refuses, and strands none', async () => {
  const poisons: Poison[] = ['none', 'nulResult', 'none', 'halfEmojiResult', 'nulError', 'none'];
  const added = await enqueuer.queue.addJobs([
    ...poisons.map((poison) => ({
      task: 'poisoned',
      payload: { poison },
      maxRetries: 0,
      promise: true,
    })),
    { task: 'poisoned', payload: { poison: 'emojiError' }, maxRetries: 0, promise: true },
  ]);
  const ids = added.map((job) => job.id);
  // One instance, one claim: all seven arrive together and their endings share batches.
  const runner = await runUntilEnded(ids);
  const outcomes = await settled(
    added.map((job) => job.promise!),
    10_000,
  );
  await runner.close();

  const byId = new Map((await statesOf(ids)).map((row) => [row.id, row]));
  const [healthy1, nulResult, healthy2, halfEmoji, nulError, healthy3, emojiError] = ids.map((id) =>
    byId.get(id)!,
  );
  for (const row of [healthy1, healthy2, healthy3]) expect(row.state).toBe('completed');
  expect(nulResult).toMatchObject({ state: 'failed' });
  expect(nulResult.lastErrorMessage).toMatch(/result .* \$ contains a NUL character/);
  expect(halfEmoji.lastErrorMessage).toMatch(/result .* \$ contains a lone surrogate/);
  // The message is kept, with what a text column cannot hold replaced.
  expect(nulError).toMatchObject({ state: 'failed', lastErrorMessage: 'bad\uFFFDbyte' });
  expect(emojiError).toMatchObject({ state: 'failed', lastErrorMessage: EMOJI_MESSAGE });

  expect(outcomes.map((outcome) => outcome.status)).toEqual([
    'fulfilled',
    'rejected',
    'fulfilled',
    'rejected',
    'rejected',
    'fulfilled',
    'rejected',
  ]);
  const emojiRejection = (outcomes[6] as PromiseRejectedResult).reason as Error;
  expect(emojiRejection).toBeInstanceOf(JobFailedError);
  // The notification carried a prefix of the message, cut on a character.
  expect(EMOJI_MESSAGE.startsWith(emojiRejection.message)).toBe(true);
  expect(emojiRejection.message.length).toBeGreaterThan(0);

  expect(
    await db.query(
      `SELECT id FROM jobs."jobHistory" WHERE state = 'active' AND id = ANY($1::uuid[])`,
      [ids],
    ),
  ).toEqual([]);
}, 60_000);

it('completes an awaited job whose earlier attempt failed with a message too long to notify', async () => {
  const { id, promise } = await enqueuer.queue.addJob<string>({
    task: 'poisoned',
    payload: { poison: 'emojiOnce' },
    maxRetries: 1,
    promise: true,
  });
  const { id: healthy, promise: healthyDone } = await enqueuer.queue.addJob<string>({
    task: 'poisoned',
    payload: { poison: 'none' },
    promise: true,
  });
  const runner = await startRunner();
  await expect(settled([promise!, healthyDone!], 20_000)).resolves.toEqual([
    { status: 'fulfilled', value: 'ok' },
    { status: 'fulfilled', value: 'ok' },
  ]);
  await runner.close();
  const states = new Map((await statesOf([id, healthy])).map((row) => [row.id, row.state]));
  expect([states.get(id), states.get(healthy)]).toEqual(['completed', 'completed']);
}, 60_000);

it('records the rest of a completion batch in which the database refuses one, and fails that one', async () => {
  // What an app's own constraint or trigger on history might refuse.
  await db.query(
    `ALTER TABLE jobs."jobHistory" ADD CONSTRAINT refuses_a_result
       CHECK (result IS NULL OR result::text <> '"refused"')`,
  );
  try {
    const poisons: Poison[] = ['none', 'refusedResult', 'none', 'none'];
    const added = await enqueuer.queue.addJobs(
      poisons.map((poison) => ({ task: 'poisoned', payload: { poison }, maxRetries: 0 })),
    );
    const ids = added.map((job) => job.id);
    const runner = await runUntilEnded(ids);
    await runner.close();
    const byId = new Map((await statesOf(ids)).map((row) => [row.id, row]));
    const [healthy1, refused, healthy2, healthy3] = ids.map((id) => byId.get(id)!);
    for (const row of [healthy1, healthy2, healthy3]) expect(row.state).toBe('completed');
    expect(refused.state).toBe('failed');
    expect(refused.lastErrorMessage).toMatch(
      /^The completion of the attempt could not be recorded: .*refuses_a_result/,
    );
  } finally {
    await db.query(`ALTER TABLE jobs."jobHistory" DROP CONSTRAINT refuses_a_result`);
  }
}, 60_000);

it('logs EndingNotRecordedError for an attempt the database refuses to record even as failed', async () => {
  // Refuses the task's message, and the message saying so, which names the constraint.
  await db.query(
    `ALTER TABLE jobs."jobHistory" ADD CONSTRAINT refuses_unwritable
       CHECK ("lastErrorMessage" IS NULL OR "lastErrorMessage" NOT LIKE '%unwritable%')`,
  );
  const { id } = await enqueuer.queue.addJob({
    task: 'poisoned',
    payload: { poison: 'refusedError' },
    maxRetries: 0,
  });
  try {
    const runner = await startJobsApp(db.url, {
      tasks: [PoisonedTask],
      options: { pollingCheck: 0.2 },
    });
    const logged = await waitFor('the error to be logged', () =>
      errors.find((line) => line.includes(id)),
    );
    expect(logged).toMatch(
      new RegExp(
        `^The end of job ${id} \\(poisoned, attempt 1\\) could not be recorded, not even as a failure: new row .*refuses_unwritable`,
      ),
    );
    // Left for the reaper: the one case where a write error leaves the attempt active.
    expect((await statesOf([id]))[0].state).toBe('active');
    await runner.close();
  } finally {
    await db.query(`DELETE FROM jobs."jobHistory" WHERE id = $1`, [id]);
    await db.query(`ALTER TABLE jobs."jobHistory" DROP CONSTRAINT refuses_unwritable`);
  }
}, 60_000);
