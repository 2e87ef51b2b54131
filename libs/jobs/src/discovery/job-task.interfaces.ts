import type { JobOutcome } from '../steps/step-info.interface.js';
import type { EntityManager } from 'typeorm';
import type { JobSnooze } from '../errors/jobs.errors.js';
import type { JobState } from '../common/job-states.js';
import type { MissedSlotPolicy, OverlapPolicy } from '../cron-schedule/cron-schedule.interface.js';
import type { StandardSchemaV1 } from '../task-schemas/standard-schema.js';
import type { HandlerPayload, HandlerReturn } from './task-definition.js';

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
   * Aborted when the attempt times out (`taskTimeout`), the instance shuts down, or the job is
   * cancelled (`cancelJob`, with a `JobCancelledError` as its reason). A task that
   * ignores it keeps running in the background after its attempt has been recorded, and holds its
   * slot of `concurrency` until it settles.
   */
  readonly signal: AbortSignal;
  /**
   * Reports how far the attempt has got: a number from 0 to 100, or a small plain JSON object (at
   * most 16 KiB, such as `{ done: 40, of: 120 }`). Call it as often as you like: the value is
   * written to the job (`getJob(id).progress`) and sent as a `progress` event to every instance at
   * most once per `progressInterval`, and the last value is always written, at the latest when the
   * attempt ends. Costs nothing until called. Throws `InvalidContextArgumentError` for any other
   * value.
   */
  reportProgress(value: number | Record<string, unknown>): void;
  /**
   * `return ctx.snooze(seconds)` (or `throw ctx.snooze(seconds)`) ends the attempt without a
   * failure and runs the job again after `seconds` (a number >= 0), with the same attempt number:
   * a snooze consumes no retry. History records the attempt `snoozed`.
   */
  snooze(seconds: number): JobSnooze;
  /**
   * A flow job's direct dependencies (`addFlow`'s `dependsOn`), by ref, all ended by the time it
   * runs: each one's `id`, `state`, and `result` (a completed one's, as its task returned it) or
   * `error`. `{}` for a job of no flow, or one that depends on nothing. Read from the database when
   * asked (in-process), or with the job before it is sent to its thread (a worker task).
   */
  dependencies(): Promise<JobDependencies>;
  /**
   * A durable step: runs `run` once and stores what it returns (plain JSON, at most
   * `maxResultBytes`); every later run of the job, on any instance (a retry, a resume after a sleep
   * or a wait), returns the stored value without running it. Steps are keyed by `name` within the
   * job; a name called again in one run is numbered (`name#2`...), so loops and `Promise.all` over
   * named steps replay in order. A step that throws is recorded failed, and fails the attempt (the
   * task's retries apply); its next run runs it again. Code outside steps runs again on every run.
   */
  step<T>(name: string, run: () => T | Promise<T>): Promise<T>;
  /**
   * A durable sleep: the attempt ends as suspended (no retry consumed, its slot freed) and the job
   * runs again from the top once `seconds` have passed, on any instance, replaying its finished
   * steps; this call then returns. Throws a `JobSuspension` to end the attempt: let it through.
   */
  sleep(name: string, seconds: number): Promise<void>;
  /**
   * Waits durably for the event `event` (`JobQueueService.sendEvent`): returns its payload at once
   * if it was sent (within `historyExpiration`), else suspends the job until it is sent, or until
   * `timeout` seconds have passed (then returns `null`). The first event of a name wins.
   */
  waitForEvent<T = unknown>(event: string, options?: { timeout?: number }): Promise<T | null>;
  /**
   * Waits durably for the jobs `ids` (1 to 10,000) to end, and returns how each ended, by id:
   * `{ state, result?, error? }` (a failed job is reported, not thrown). Suspends the job, its
   * slot freed, until they have: the endings of flow jobs (`addFlow`) resume it at once; for other
   * jobs it looks again every 30 seconds. A durable step of its own: a later run returns the
   * stored outcomes.
   */
  waitForJobs(ids: readonly string[]): Promise<Record<string, JobOutcome>>;
  /**
   * With `@JobTask({ transactional: true })`: the `EntityManager` of a transaction in which the
   * attempt's end is written, so that what the task writes through it commits with the job's
   * completion (or snooze) and rolls back when the attempt fails, times out or was taken away
   * from this instance. `undefined` for other tasks.
   */
  readonly manager?: EntityManager;
}

/**
 * A class decorated with `@JobTask()`: Nest builds it with its dependencies, and the runner calls
 * `run` for each job of its task. What it returns (plain JSON data, at most `maxResultBytes`) is
 * the job's result: stored with the attempt, read by `getJob(id).result`, and what an awaiting
 * `promise` resolves to. A thrown error (or rejected promise) fails the attempt; an
 * `UnrecoverableJobError` fails the job with no retry; `ctx.snooze()` runs it again later.
 *
 * `Payload` is the payload's type, or a task definition (`JobTaskHandler<typeof SendEmail>`, see
 * `defineTask`): `run` then takes its `payloadSchema`'s output and returns its `resultSchema`'s
 * input.
 *
 * @publicApi
 */
export interface JobTaskHandler<Payload = unknown, Result = unknown> {
  run(
    payload: HandlerPayload<Payload>,
    ctx: JobContext,
  ): Promise<HandlerReturn<Payload, Result>> | HandlerReturn<Payload, Result>;
}

/**
 * A task's own retry delays: called with the attempt that failed (1 for the first) and its error,
 * while the job has retries left. Returns the seconds to wait before the next attempt, or
 * `'giveUp'` to fail the job now. A throw, or anything but a number of seconds from 0 to
 * `MAX_RETRY_DELAY_LIMIT` or `'giveUp'`, is logged and the default backoff applies.
 *
 * @publicApi
 */
export type JobBackoff = (attempt: number, error: Error) => number | 'giveUp';

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
   * Retry delays of this task's jobs instead of `2^(attempt-1) * retryBackoff` (see `JobBackoff`).
   * For a worker task it runs in the pool thread, for the errors its handler throws; a thread that
   * dies or does not answer is retried on the default backoff.
   */
  backoff?: JobBackoff;
  /**
   * Run each attempt in a database transaction, given to the task as `ctx.manager`, in which the
   * attempt's end is written: the task's own writes through `ctx.manager` and the job's
   * completion commit together, or neither does. Each running attempt holds one connection of the
   * module's pool (or the shared `dataSource`'s) until it ends. In-process tasks only (not with
   * `worker: true`). Default `false`.
   */
  transactional?: boolean;
  /**
   * Runs the task on this cron schedule, once per slot across all instances (a static schedule
   * named after the task; see `CronScheduleOptions` for the expression, zones and DST). A `Date`
   * is a one-off slot.
   */
  cron?: string | Date;
  /** IANA time zone of `cron`. Default `'UTC'`. */
  timezone?: string;
  /**
   * A Standard Schema v1 object (zod 4, valibot 1, arktype 2, ...) for the task's payload. Checked
   * at enqueue, before anything is written (`InvalidPayloadError` with the schema's issues), by an
   * instance that runs the task or enqueues with its definition (`defineTask`); parsed again at run,
   * in the thread that runs it: the handler gets the schema's output, and a stored payload it
   * refuses fails the job with no retry (`TaskSchemaError`). Not `payload`, the cron jobs' payload.
   */
  payloadSchema?: StandardSchemaV1;
  /**
   * A Standard Schema v1 object for what the task returns: what it makes of the return value is
   * the result stored and resolved; a value it refuses fails the job with no retry
   * (`TaskSchemaError`). A snooze is not checked.
   */
  resultSchema?: StandardSchemaV1;
  /** Payload of the jobs `cron` plans. Default `{}`. */
  payload?: unknown;
  /**
   * What happens to slots whose job has not started within `missedSlotGrace` of their time.
   * Default `'skip'`.
   */
  missedSlots?: MissedSlotPolicy;
  /** Seconds after its slot a `cron` job may still start. Default: the module's `missedSlotGrace`. */
  missedSlotGrace?: number;
  /** Whether a slot may start while a run of the schedule is active. Default `'allow'`. */
  overlap?: OverlapPolicy;
}

/**
 * One direct dependency of a flow job, as `ctx.dependencies()` gives it: ended, since the job
 * runs only once all of them have. `result` is what a completed one's task returned (absent when
 * it returned nothing); `error`, why one that did not complete ended.
 *
 * @publicApi
 */
export interface JobDependency {
  id: string;
  state: JobState;
  result?: unknown;
  error?: string | null;
}

/**
 * A flow job's direct dependencies by ref (`ctx.dependencies()`); `{}` for a job of no flow or
 * one that depends on nothing.
 *
 * @publicApi
 */
export type JobDependencies = Record<string, JobDependency>;
