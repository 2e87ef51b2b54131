import type { MissedSlotPolicy } from '../schedule/cron-schedule.interface.js';

/**
 * What a running task knows about its job.
 *
 * @publicApi
 */
export interface JobContext {
  /** The job's id, stable across its attempts. */
  readonly id: string;
  /** The task name. */
  readonly task: string;
  /** 1 for the first run, 2 for the first retry, and so on. */
  readonly attempt: number;
  /** Retries the job may use after its first attempt. */
  readonly maxRetries: number;
  /**
   * Aborted when the attempt times out (`taskTimeout`) or the instance shuts down. A task that
   * ignores it keeps running in the background after its attempt has been recorded, and holds its
   * slot of `concurrency` until it settles.
   */
  readonly signal: AbortSignal;
}

/**
 * A class decorated with `@JobTask()`: Nest builds it with its dependencies, and the runner calls
 * `run` for each job of its task. A thrown error (or rejected promise) fails the attempt.
 *
 * @publicApi
 */
export interface JobTaskHandler<Payload = unknown> {
  run(payload: Payload, ctx: JobContext): Promise<unknown> | unknown;
}

/**
 * Options of `@JobTask()`.
 *
 * @publicApi
 */
export interface JobTaskOptions {
  /** The task name jobs are enqueued under. */
  name: string;
  /** Retries for this task's jobs when `addJob` gives none. Default: the module's `maxRetries`. */
  maxRetries?: number;
  /** Seconds an attempt of this task may run. Default: the module's `taskTimeout`. */
  timeout?: number;
  /**
   * The queue this task's jobs belong to: its limits (module option `queues`) apply to them, and
   * pausing it stops them from starting. Default `'default'`.
   */
  queue?: string;
  /**
   * Run this task in the worker-thread pool rather than in the app's thread. The class belongs in
   * the module named by the JobsModule option `workerModule`, which every pool thread boots: it is
   * built there with its dependencies, and `ctx.signal` works as in-process. The payload and the
   * return value cross threads as JSON. Default `false`.
   */
  worker?: boolean;
  /**
   * Runs the task on this cron schedule, once per slot across all instances (a static schedule
   * named after the task; see `CronScheduleOptions` for the expression, zones and DST).
   */
  cron?: string;
  /** IANA time zone of `cron`. Default `'UTC'`. */
  timezone?: string;
  /** Payload of the jobs `cron` plans. Default `{}`. */
  payload?: unknown;
  /**
   * What happens to slots whose job has not started within `missedSlotGrace` of their time.
   * Default `'skip'`.
   */
  missedSlots?: MissedSlotPolicy;
  /** Seconds after its slot a `cron` job may still start. Default: the module's `missedSlotGrace`. */
  missedSlotGrace?: number;
}
