import type { JobState } from './job-info.interface.js';

/**
 * Which jobs a bulk call (`retryJobs`, `cancelJobs`, `deleteJobs`) takes. Every field narrows;
 * `{}` takes every job in the call's default states.
 *
 * @publicApi
 */
export interface JobFilter<State extends JobState> {
  /** Only the jobs of this task. */
  task?: string;
  /**
   * Only the jobs of this queue: for a job that ran, the queue it ran in; for a pending one, the
   * queue its enqueuing instance knew for its task (`default` for a cron job until it starts).
   */
  queue?: string;
  /** Only the jobs of this group (`groupKey`). */
  groupKey?: string;
  /**
   * Only the jobs added with this unique key (`AddJobOptions.uniqueKey`), exactly: the pending job
   * that holds it, and the jobs of that key that started since (history keeps a job's key).
   */
  uniqueKey?: string;
  /** Only the jobs in this state, or in one of these. */
  state?: State | readonly State[];
  /** Only the jobs enqueued before this time (the job's `createdAt`, kept across its attempts). */
  before?: Date;
  /** Only the jobs enqueued at or after this time. */
  after?: Date;
  /**
   * Only the jobs whose last error contains this text, in any case (a queued job's: that of its
   * attempt before). At most 200 characters; `%` and `_` are plain characters.
   */
  error?: string;
}

/** The states `retryJobs` takes jobs from: endings that leave a job out of the queue for good. @publicApi */
export type RetryableJobState = 'failed' | 'interrupted' | 'cancelled';

/**
 * The states `cancelJobs` takes jobs from: queued (`blocked` flow jobs, `pending` and `suspended` ones) or running.
 * @publicApi
 */
export type CancellableJobState = 'blocked' | 'pending' | 'suspended' | 'active';

/** What `retryJobs` takes; without `state`, the jobs that failed or were interrupted for good. @publicApi */
export type RetryJobsFilter = JobFilter<RetryableJobState>;

/** What `cancelJobs` takes; without `state`, blocked, pending, suspended and running jobs alike. @publicApi */
export type CancelJobsFilter = JobFilter<CancellableJobState>;

/**
 * The states `deleteJobs` takes jobs from: the endings of jobs that ended for good. A job that has
 * not ended (blocked, pending, suspended, active) is cancelled first (`cancelJobs`).
 * @publicApi
 */
export type DeletableJobState = 'completed' | 'failed' | 'interrupted' | 'cancelled' | 'skipped';

/** What `deleteJobs` takes; without `state`, the jobs that ended for good in any way. @publicApi */
export type DeleteJobsFilter = JobFilter<DeletableJobState>;
