import type { JobsDatabase } from '../database/jobs-database.js';
import { JobNotFoundError } from '../errors/jobs.errors.js';
import { NEW_JOB_NOTIFICATION } from '../notify/notification-protocol.js';
import type { CompletionWaiters, JobEnding, JobWait } from './completion-waiters.js';
import type { QueueSql } from './job-queue.sql.js';
import { untilSettled } from './until-settled.js';
import type { ValidatedJob } from './validate-job.js';
import { validateWaitOptions } from './validate-queue-calls.js';
import type { WaitForJobOptions } from './wait-for-job-options.interface.js';

/** Where `awaitJob` found a job (see job-queue.sql.ts). */
interface AwaitedJobRow {
  readonly queued: boolean | null;
  readonly state: string | null;
  readonly awaitedRunning: boolean | null;
  readonly error: string | null;
  /** A completed job's result as JSON text; SQL NULL: its task returned nothing. */
  readonly result: string | null;
  readonly marked: number;
}

/** The waits of one enqueue's awaited jobs (`addJob({ promise: true })`), registered before its insert. */
export interface EnqueueWaits {
  /**
   * The promise of `job`, if it is awaited: its own, or, when its unique key folded it into the
   * pending job `pendingId`, that job's (its own wait is then dropped).
   */
  promiseOf(job: ValidatedJob, pendingId: string | undefined): Promise<unknown> | undefined;
  /** The enqueue failed: nobody waits for these jobs any more. */
  forget(): void;
}

/**
 * The callers of `JobQueueService` waiting for jobs to end: `waitForJob`, and the promises of
 * awaited adds and the settling of those a cancel ended, on top of this instance's
 * `CompletionWaiters` (which hears how jobs end, and times the waits out).
 */
export class JobWaiting {
  constructor(
    private readonly db: JobsDatabase,
    private readonly sql: QueueSql,
    private readonly waiters: CompletionWaiters,
    private readonly channel: string,
  ) {}

  /** See `JobQueueService.waitForJob`; `id` is checked already. */
  async waitForJob<TResult>(id: string, options: WaitForJobOptions): Promise<TResult> {
    const seconds = validateWaitOptions(options);
    // Registered before the job is looked at: it may end between the look and the registration.
    const wait = this.waiters.wait(
      id,
      seconds === undefined ? undefined : { seconds, setBy: 'the timeout of waitForJob' },
    );
    // A timeout while the statement runs rejects before the caller holds the promise.
    wait.promise.catch(() => undefined);
    try {
      await untilSettled(`waiting for job ${id}`, async () => {
        const [row] = await this.db.query<AwaitedJobRow>(this.sql.awaitJob, [
          id,
          this.channel,
          NEW_JOB_NOTIFICATION,
        ]);
        if (row.queued !== null) return row.queued || row.marked > 0 || undefined;
        if (row.state === null) throw new JobNotFoundError(id);
        if (row.state === 'active') return row.awaitedRunning || row.marked > 0 || undefined;
        // Ended: nothing will notify it any more.
        this.waiters.settle({
          id,
          state: row.state,
          error: row.error,
          result: row.result,
        } satisfies JobEnding);
        return true;
      });
    } catch (err) {
      wait.forget();
      throw err;
    }
    return wait.promise as Promise<unknown> as Promise<TResult>;
  }

  /**
   * Registers the waits of `jobs`' awaited ones before they are inserted: a job may end before the
   * insert's reply reaches us.
   */
  forEnqueue(jobs: readonly ValidatedJob[]): EnqueueWaits {
    const waits = new Map<ValidatedJob, JobWait>(
      jobs.filter((job) => job.awaited).map((job) => [job, this.waiters.wait(job.id)]),
    );
    return {
      promiseOf: (job, pendingId) => {
        if (pendingId === undefined) return waits.get(job)?.promise;
        // The job was never inserted: its caller waits for the pending job it was folded into.
        waits.get(job)?.forget();
        return job.awaited ? this.waiters.wait(pendingId).promise : undefined;
      },
      forget: () => {
        for (const wait of waits.values()) wait.forget();
      },
    };
  }

  /** Rejects the waits for `ids` with `JobCancelledError`: a cancel of this instance ended them. */
  cancelled(ids: readonly string[]): void {
    for (const id of ids) this.waiters.settle({ id, state: 'cancelled' });
  }
}
