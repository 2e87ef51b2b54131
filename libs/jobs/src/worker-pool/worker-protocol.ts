import type { AttemptEnding, RetryDecision } from '../attempt/attempt-ending.js';
import type { JobTaskOptions } from '../discovery/job-task.interfaces.js';

/**
 * What crosses between the main thread and a pool thread. Everything here is structured-cloned
 * by `postMessage`: the payload is the job's JSON as read from the database, and `control` is a
 * `SharedArrayBuffer`, the one thing both sides see at once.
 */

/** Names of the task functions every pool thread registers. */
export const RUN_TASK = 'run';
export const DESCRIBE_TASKS = 'describe';

/** Slots of a job's control array (`Int32Array` over `WorkerJobRequest.control`). */
export const CONTROL_THREAD = 0;
export const CONTROL_SIGNAL = 1;
export const CONTROL_STARTED = 2;
export const CONTROL_SLOTS = 3;

/** Values of `CONTROL_STARTED`: the thread has booted and called the handler, or nobody waits now. */
export const STARTED_NO = 0;
export const STARTED_YES = 1;
export const STARTED_GAVE_UP = 2;

/** Values of `CONTROL_SIGNAL`: written by the main thread (abort) or the pool thread (ended). */
export const SIGNAL_NONE = 0;
export const SIGNAL_TIMEOUT = 1;
export const SIGNAL_SHUTDOWN = 2;
export const SIGNAL_ENDED = 3;
export const SIGNAL_CANCELLED = 4;

/** Where a pool thread finds its Nest module; given to every thread as its `workerData`. */
export interface WorkerThreadData {
  /** `file:` URL of the module file. */
  readonly moduleUrl: string;
  /** Export to boot; the only exported Nest module when unset. */
  readonly exportName?: string;
  /** Name of the `BroadcastChannel` on which threads send `ctx.reportProgress` values. */
  readonly progressChannel: string;
}

export interface WorkerJobRequest {
  readonly task: string;
  readonly payload: unknown;
  readonly id: string;
  readonly attempt: number;
  readonly maxRetries: number;
  /** Seconds of `taskTimeout` for this attempt: the thread builds its `JobTimeoutError` from it. */
  readonly timeout: number;
  /** The module's `maxResultBytes`: the thread checks the result it sends back. */
  readonly maxResultBytes: number;
  /**
   * `CONTROL_SLOTS` int32 slots. The thread stores its `threadId` in `CONTROL_THREAD` the moment it
   * starts the job (so the main thread knows whose death ends it); the main thread stores an abort
   * reason in `CONTROL_SIGNAL` and notifies, which the thread turns into `ctx.signal`; the thread
   * sets `CONTROL_STARTED` when its module has booted and the handler is called, which starts the
   * attempt's `taskTimeout` clock.
   */
  readonly control: SharedArrayBuffer;
}

/** `Atomics.waitAsync` (Node 16+), missing from the ES2023 typings this repo compiles against. */
export const waitAsync = (
  Atomics as unknown as {
    waitAsync(
      array: Int32Array,
      index: number,
      value: number,
      timeoutMs?: number,
    ): { async: boolean; value: Promise<string> | string };
  }
).waitAsync;

/** Resolves once `array[index]` is no longer `value` (or after `timeoutMs`). */
export async function whenChanged(
  array: Int32Array,
  index: number,
  value: number,
  timeoutMs?: number,
) {
  const waiting = waitAsync(array, index, value, timeoutMs);
  if (waiting.async) await waiting.value;
}

/** A thread's answer to `DESCRIBE_TASKS`: the worker tasks its module provides. */
export type WorkerTaskDescriptions = JobTaskOptions[];

/** The fields of a task's error that cross back: its class does not (a thread's realm is its own). */
export interface ThreadErrorFields {
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
}

/**
 * A thread's answer to `RUN_TASK` once the handler ran: how the attempt ended, decided in the
 * thread (where the result is checked and the task's `backoff` lives), and the last progress value.
 * Progress messages travel on their own channel, which may deliver them after this answer: the
 * last one comes with it, so that it is never lost.
 */
export interface WorkerJobOutcome {
  readonly ending:
    | Exclude<AttemptEnding, { outcome: 'failed' }>
    | {
        readonly outcome: 'failed';
        readonly error: ThreadErrorFields;
        readonly retry: RetryDecision;
      };
  readonly progress?: string;
}

/** A `ctx.reportProgress` value sent from a thread on `WorkerThreadData.progressChannel`. */
export interface WorkerProgressMessage {
  readonly id: string;
  readonly attempt: number;
  /** The value as JSON, checked in the thread. */
  readonly progress: string;
}
