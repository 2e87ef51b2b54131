export type { JobState } from '../common/job-states.js';
import type { JobState } from '../common/job-states.js';
import type { JobStepInfo, JobWaitingFor } from '../steps/step-info.interface.js';

/**
 * A job as `getJob` reports it; `Result` types its `result`.
 *
 * @publicApi
 */
export interface JobInfo<Result = unknown> {
  id: string;
  task: string;
  state: JobState;
  payload: unknown;
  priority: number;
  /** Attempts started so far (0 for a job that never ran). */
  attempt: number;
  maxRetries: number;
  /** When a pending job becomes due; `null` once it has been claimed, and while it is blocked. */
  waitUntil: Date | null;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  /** The error of the last failed attempt, kept while the job is retried. */
  lastErrorMessage: string | null;
  /** The instance that ran (or runs) the last attempt. */
  executedBy: string | null;
  /** What the task returned, for a completed job; `null` otherwise, or when it returned nothing. */
  result: Result | null;
  /**
   * The last progress an attempt of the job reported (`ctx.reportProgress`): a number from 0 to 100
   * or the object the task gave; `null` when none has. A later attempt starts from the last one's
   * until it reports its own.
   */
  progress: unknown;
  /**
   * Its queue: the one its task's instance recorded when it started; while it waits to run, the
   * one the enqueuing instance knew for the task (`default` for a task it has no handler for).
   */
  queue: string;
  /** `AddJobOptions.groupKey`, or `null`. */
  groupKey: string | null;
  /**
   * `AddJobOptions.uniqueKey`, or `null`: kept for the job's whole life, though it holds other jobs
   * off only while the job is pending for the first time (it frees itself when the job starts).
   */
  uniqueKey: string | null;
  /** The flow it belongs to (`addFlow`), or `null`. */
  flowId: string | null;
  /**
   * Its durable steps (`ctx.step`, `ctx.sleep`, `ctx.waitForEvent`), one entry per step name (its
   * latest try), in the order of their first calls; `[]` for a job without steps.
   */
  steps: JobStepInfo[];
  /** What a `suspended` job waits for; `null` for a job in any other state. */
  waitingFor: JobWaitingFor | null;
}
