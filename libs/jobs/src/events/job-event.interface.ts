import type { JobWaitingFor } from '../steps/step-info.interface.js';

/**
 * What happened to a job, as seen by this instance: jobs it enqueued, started, ended, cancelled or
 * queued again (`retried`). Another instance's jobs are that instance's events, but for
 * `progress`, which every instance hears.
 *
 * @publicApi
 */
export type JobEvent =
  | JobAddedEvent
  | JobStartedEvent
  | JobCompletedEvent
  | JobFailedEvent
  | JobCancelledEvent
  | JobSkippedEvent
  | JobRetriedEvent
  | JobSnoozedEvent
  | JobSuspendedEvent
  | JobResumedEvent
  | JobProgressEvent;

/** The type names of `JobEvent`. @publicApi */
export type JobEventType = JobEvent['type'];

/**
 * @deprecated Renamed {@link JobEvent}: "lifecycle" names the module's start and stop, not what
 * happens to a job.
 * @publicApi
 */
export type JobLifecycleEvent = JobEvent;

/** @deprecated Renamed {@link JobEventType}. @publicApi */
export type JobLifecycleEventType = JobEventType;

/** What every `JobEvent` carries. @publicApi */
export interface JobEventBase {
  readonly id: string;
  readonly task: string;
  /**
   * The job's queue: for `added`, the queue this instance knows for the task (`default` for a task
   * it has no handler for); otherwise the one the claim recorded.
   */
  readonly queue: string;
  /** This instance's clock. */
  readonly at: Date;
}

/**
 * The insert returned. Inside a caller's transaction (`manager`) the job exists only once that
 * commits: a rolled-back enqueue was still announced.
 */
export interface JobAddedEvent extends JobEventBase {
  readonly type: 'added';
}

export interface JobStartedEvent extends JobEventBase {
  readonly type: 'started';
  readonly attempt: number;
}

export interface JobCompletedEvent extends JobEventBase {
  readonly type: 'completed';
  readonly attempt: number;
  /** How long the attempt ran, on this instance's monotonic clock. */
  readonly durationMs: number;
}

export interface JobFailedEvent extends JobEventBase {
  readonly type: 'failed';
  readonly attempt: number;
  readonly durationMs: number;
  readonly error: string;
  /** `true` when the job was queued again for another attempt; `false` when it failed for good. */
  readonly willRetry: boolean;
  /**
   * `true` when the task gave up: it threw an `UnrecoverableJobError`, or its `backoff` answered
   * `'giveUp'`, so the job failed with retries left.
   */
  readonly gaveUp: boolean;
}

/** This instance cancelled the job (`cancelJob`, `cancelJobs`), queued or running. */
export interface JobCancelledEvent extends JobEventBase {
  readonly type: 'cancelled';
}

/**
 * Why a cron job was skipped: `'missed'`, it had not started within its schedule's
 * `missedSlotGrace` after its slot (see `MissedSlotPolicy`); `'overlap'`, its schedule
 * (`overlap: 'skip'`) had a run active or a later slot due (see `OverlapPolicy`).
 *
 * @publicApi
 */
export type SkipReason = 'missed' | 'overlap';

/** A cron job this instance's claim took out of the queue without running it. */
export interface JobSkippedEvent extends JobEventBase {
  readonly type: 'skipped';
  readonly reason: SkipReason;
}

/**
 * This instance queued again a job that had ended for good (`retryJobs`, or the dashboard's retry):
 * it is pending, for one more attempt.
 */
export interface JobRetriedEvent extends JobEventBase {
  readonly type: 'retried';
}

/**
 * The task asked to run later (`ctx.snooze`): the attempt ended without a failure and the job is
 * queued again, with its attempt unconsumed.
 */
export interface JobSnoozedEvent extends JobEventBase {
  readonly type: 'snoozed';
  readonly attempt: number;
  readonly durationMs: number;
  /** Seconds until the job is due again. */
  readonly seconds: number;
}

/**
 * A step of the task waits durably (`ctx.sleep`, `ctx.waitForEvent`): the attempt ended without a
 * failure and without consuming a retry, and the job is queued, suspended, until `waitingFor`.
 */
export interface JobSuspendedEvent extends JobEventBase {
  readonly type: 'suspended';
  readonly attempt: number;
  readonly durationMs: number;
  readonly waitingFor: JobWaitingFor;
}

/** This instance started a suspended job again: its wait is over (or its event came). */
export interface JobResumedEvent extends JobEventBase {
  readonly type: 'resumed';
  readonly attempt: number;
}

/**
 * A running attempt's `ctx.reportProgress` value was written (at most once per
 * `progressInterval`). Heard on every instance, over `NOTIFY`, not only on the one running it.
 */
export interface JobProgressEvent extends JobEventBase {
  readonly type: 'progress';
  readonly attempt: number;
  /** A number from 0 to 100, or the object the task reported. */
  readonly progress: unknown;
}
