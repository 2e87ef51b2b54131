/**
 * Where a job is: `pending` in the queue (also between retries), `active` on an instance, or
 * ended. `skipped` is a cron job that never ran: it had not started within its schedule's
 * `missedSlotGrace` after its slot.
 *
 * @publicApi
 */
export type JobState =
  'pending' | 'active' | 'completed' | 'failed' | 'interrupted' | 'cancelled' | 'skipped';

/**
 * A job as `getJob` reports it.
 *
 * @publicApi
 */
export interface JobInfo {
  id: string;
  task: string;
  state: JobState;
  payload: unknown;
  priority: number;
  /** Attempts started so far (0 for a job that never ran). */
  attempt: number;
  maxRetries: number;
  /** When a pending job becomes due; `null` once it has been claimed. */
  waitUntil: Date | null;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  /** The error of the last failed attempt, kept while the job is retried. */
  lastErrorMessage: string | null;
  /** The instance that ran (or runs) the last attempt. */
  executedBy: string | null;
  /**
   * Its queue: the one its task's instance recorded when it started; while it waits to run, the
   * one the enqueuing instance knew for the task (`default` for a task it has no handler for).
   */
  queue: string;
  /** `AddJobOptions.groupKey`, or `null`. */
  groupKey: string | null;
}
