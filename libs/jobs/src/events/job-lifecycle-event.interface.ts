/**
 * What happened to a job, as seen by this instance: jobs it enqueued, started, ended or cancelled.
 * Another instance's jobs are that instance's events.
 *
 * @publicApi
 */
export type JobLifecycleEvent =
  | JobAddedEvent
  | JobStartedEvent
  | JobCompletedEvent
  | JobFailedEvent
  | JobCancelledEvent
  | JobSkippedEvent;

/** The type names of `JobLifecycleEvent`. @publicApi */
export type JobLifecycleEventType = JobLifecycleEvent['type'];

/** What every `JobLifecycleEvent` carries. @publicApi */
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
}

export interface JobCancelledEvent extends JobEventBase {
  readonly type: 'cancelled';
}

/**
 * A cron job this instance's claim took out of the queue without running it: it had not started
 * within its schedule's `missedSlotGrace` after its slot (see `MissedSlotPolicy`).
 */
export interface JobSkippedEvent extends JobEventBase {
  readonly type: 'skipped';
}
