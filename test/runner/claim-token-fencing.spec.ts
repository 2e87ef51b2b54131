import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

/** How many runs each job started. */
const runs = new Map<string, number>();
/** Opens the second run's gate. */
let letSecondRunEnd!: () => void;
const secondRunGate = new Promise<void>((resolve) => (letSecondRunEnd = resolve));

/** Snoozes at once on its first run; its second run ends when the test says so. */
@JobTask({ name: 'snoozeOnce' })
@Injectable()
class SnoozeOnceTask implements JobTaskHandler<unknown, string> {
  async run(_payload: unknown, ctx: JobContext) {
    const run = (runs.get(ctx.id) ?? 0) + 1;
    runs.set(ctx.id, run);
    if (run === 1) return ctx.snooze(0);
    await secondRunGate;
    return 'done';
  }
}

it('fences a repeated snooze whose reply was lost out of the run the same instance claimed since', async () => {
  const app = await startJobsApp(db.url, {
    tasks: [SnoozeOnceTask],
    options: { pollingCheck: 0.1 },
  });
  const database = app.module.get(JobsDatabase, { strict: false });
  const query = database.query.bind(database);
  let snoozeWrites = 0;
  let repeatedSnoozeRows: number | undefined;
  database.query = (async (statement: Parameters<typeof query>[0], values?: unknown[]) => {
    const isSnooze =
      typeof statement !== 'string' && statement.text.includes("SET state = 'snoozed'");
    const rows = await query(statement, values);
    if (!isSnooze) return rows;
    snoozeWrites++;
    if (snoozeWrites > 1) {
      repeatedSnoozeRows = rows.length;
      return rows;
    }
    // The snooze committed, but its reply is lost: by the time the write is tried again, this very
    // instance has claimed the job again (same attempt number: a snooze does not consume one).
    const id = (values as unknown[])[0] as string;
    await waitFor('the second run to start', () => runs.get(id) === 2);
    throw new Error('Connection terminated unexpectedly');
  }) as typeof database.query;

  const { id, promise } = await app.queue.addJob<string>({
    task: 'snoozeOnce',
    maxRetries: 0,
    promise: true,
  });
  await waitFor('the snooze to be written again', () => repeatedSnoozeRows !== undefined);
  expect(repeatedSnoozeRows).toBe(0);
  letSecondRunEnd();
  await expect(promise).resolves.toBe('done');

  expect(runs.get(id)).toBe(2);
  const [history] = await db.query<{ state: string; attempt: number; snoozes: number }>(
    `SELECT state, attempt, snoozes FROM jobs."jobHistory" WHERE id = $1`,
    [id],
  );
  expect(history).toEqual({ state: 'completed', attempt: 1, snoozes: 1 });
  // The attempt log keeps the snooze once: the repeat, fenced out, recorded nothing.
  const logged = await db.query<{ attempt: number; outcome: string }>(
    `SELECT attempt, outcome FROM jobs."jobAttempt" WHERE "jobId" = $1`,
    [id],
  );
  expect(logged).toEqual([{ attempt: 1, outcome: 'snoozed' }]);
  expect(await db.query(`SELECT 1 FROM jobs.jobs WHERE id = $1`, [id])).toEqual([]);
  await app.close();
}, 30_000);
