import { Injectable } from '@nestjs/common';
import { JobTask, ReaperService } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { quietLogger, startJobsApp, waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

/** A promise each test settles itself, per job and attempt. */
const gates = new Map<string, () => void>();
function gate(id: string, attempt: number): Promise<void> {
  return new Promise((resolve) => gates.set(`${id}:${attempt}`, resolve));
}
function open(id: string, attempt: number): void {
  gates.get(`${id}:${attempt}`)!();
}

/** Times out, ignores its signal, and runs on until its gate opens. */
@JobTask({ name: 'stubborn', timeout: 0.2, maxRetries: 0 })
@Injectable()
class StubbornTask implements JobTaskHandler {
  async run(_payload: unknown, ctx: JobContext): Promise<void> {
    await gate(ctx.id, ctx.attempt);
  }
}

/** Runs until its gate opens. */
@JobTask({ name: 'gated', maxRetries: 3 })
@Injectable()
class GatedTask implements JobTaskHandler {
  run(_payload: unknown, ctx: JobContext): Promise<void> {
    return gate(ctx.id, ctx.attempt);
  }
}

@JobTask('quick')
@Injectable()
class QuickTask implements JobTaskHandler {
  run(): void {}
}

const TASKS = [StubbornTask, GatedTask, QuickTask];

const warnings: string[] = [];
const warn = quietLogger.warn;
quietLogger.warn = (message: unknown, context?: unknown) => {
  warnings.push(String(message));
  return warn(message, context);
};

it('keeps the slot of a timed-out task that ignores its signal until the task settles', async () => {
  const app = await startJobsApp(db.url, {
    tasks: TASKS,
    options: { concurrency: 2, pollingCheck: 0.05 },
  });
  const stubborn = await app.queue.addJob({ task: 'stubborn', promise: true });
  await expect(stubborn.promise).rejects.toThrow('timeout');
  // Enqueued together, so the claim that starts one of them sees both: the other staying queued
  // shows that claim found one slot free, not two.
  const pair = await app.queue.addJobs([{ task: 'gated' }, { task: 'gated' }]);
  const first = await waitFor('one of the pair to start', () =>
    pair.find((job) => gates.has(`${job.id}:1`)),
  );
  const second = pair.find((job) => job !== first)!;
  expect((await app.queue.getJob(second.id))?.state).toBe('pending');
  open(stubborn.id, 1);
  await waitFor('the other one to start once the task settled', () => gates.has(`${second.id}:1`));
  open(first.id, 1);
  open(second.id, 1);
  await app.close();
});

it('gives back at shutdown the attempt that runs, not one of the same job that ended meanwhile', async () => {
  const app = await startJobsApp(db.url, {
    tasks: TASKS,
    options: { concurrency: 2, pollingCheck: 0.05, shutdownTimeout: 0.2 },
  });
  const { id } = await app.queue.addJob({ task: 'gated' });
  await waitFor('attempt 1 to start', () => gates.has(`${id}:1`));
  // A reaper takes attempt 1 for stale (as for an instance that was paused) and requeues the job.
  await db.query(
    `UPDATE jobs."jobHistory" SET "startedAt" = now() - interval '2 hours' WHERE id = $1`,
    [id],
  );
  await app.module.get(ReaperService).reapStaleJobs();
  await waitFor('attempt 2 to start here', () => gates.has(`${id}:2`));
  // Attempt 1 ends late: its write is fenced out, and it must not take attempt 2's place with it.
  open(id, 1);
  await waitFor('the fenced write of attempt 1', () =>
    warnings.some((line) => line.includes(id) && line.includes('no longer the active one')),
  );
  await new Promise((resolve) => setImmediate(resolve));
  await app.close();
  expect(await db.historyOf(id)).toMatchObject({ state: 'interrupted', attempt: 2 });
  const [queued] = await db.query<{ retries: number }>(
    'SELECT retries FROM jobs.jobs WHERE id = $1',
    [id],
  );
  expect(queued).toEqual({ retries: 1 });
  open(id, 2);
  await db.query('DELETE FROM jobs.jobs WHERE id = $1', [id]);
});

it('requeues, within a poll, the jobs of a claim that committed but lost its reply', async () => {
  const app = await startJobsApp(db.url, {
    tasks: TASKS,
    // Neither the peers' fast path nor the stale fallback could rescue them in this test's time.
    options: { concurrency: 4, pollingCheck: 0.1, instanceTimeout: 60, staleJobTimeout: 3600 },
  });
  const database = app.module.get(JobsDatabase, { strict: false });
  const query = database.query.bind(database);
  let lostReplies = 0;
  database.query = (async (statement: Parameters<typeof query>[0], values?: unknown[]) => {
    const rows = await query(statement, values);
    if (
      lostReplies === 0 &&
      typeof statement !== 'string' &&
      statement.text.includes('claimed AS')
    ) {
      lostReplies++;
      throw new Error('Connection terminated unexpectedly');
    }
    return rows;
  }) as typeof database.query;

  const { id, promise } = await app.queue.addJob({ task: 'quick', promise: true });
  await promise;
  expect(lostReplies).toBe(1);
  expect(await db.historyOf(id)).toMatchObject({ state: 'completed', attempt: 1 });
  await app.close();
});
