import type { AttemptEnding, RetryDecision } from '../attempt/attempt-ending.js';
import type { JobTaskOptions } from '../discovery/job-task.interfaces.js';
import type { JobDependencies } from '../discovery/job-task.interfaces.js';
import type { JobSuspension } from '../errors/jobs.errors.js';

/**
 * What crosses between the main thread and a pool thread. Everything here is structured-cloned
 * by `postMessage`: the payload is the job's JSON as read from the database, and `control` is a
 * `SharedArrayBuffer`, the one thing both sides see at once (`JobControl`).
 */

/** Names of the task functions every pool thread registers. */
export const RUN_BATCH = 'runBatch';
export const DESCRIBE_TASKS = 'describe';

/** Where a pool thread finds its Nest module; given to every thread as its `workerData`. */
export interface WorkerThreadData {
  /** `file:` URL of the module file. */
  readonly moduleUrl: string;
  /** Export to boot; the only exported Nest module when unset. */
  readonly exportName?: string;
  /** Whether the thread transpiles TypeScript itself (see `resolveWorkerEntry`). */
  readonly transpileTypeScript: boolean;
  /** Name of the `BroadcastChannel` on which threads send `ctx.reportProgress` values. */
  readonly progressChannel: string;
  /** The module's `maxResultBytes`: the thread checks the results it sends back. */
  readonly maxResultBytes: number;
  /** Name of the channels of durable steps' calls to the main thread (`thread-step-store.ts`). */
  readonly stepsChannel: string;
}

export interface WorkerJobRequest {
  /** Names this send of the job in the answer the thread sends (`WorkerAnswerMessage`). */
  readonly key: number;
  /** Its control slots within the batch's `control` buffer (see `JobControl`). */
  readonly slot: number;
  readonly task: string;
  readonly payload: unknown;
  readonly id: string;
  readonly attempt: number;
  readonly maxRetries: number;
  /** The claim's token: it fences the job's step checkpoints. */
  readonly claim: string;
  /** Seconds of `taskTimeout` for this attempt: the thread builds its `JobTimeoutError` from it. */
  readonly timeout: number;
  /** A flow job's dependencies (`ctx.dependencies()`), read by the main thread. */
  readonly dependencies?: JobDependencies;
}

/**
 * Jobs handed to one thread in one message, which it starts one at a time, in order. The task
 * call settles once every job of the batch has ended or was taken back: until then poolifier
 * counts the thread busy (so it neither retires it nor counts it idle). Each job's outcome comes
 * back on its own, in a `WorkerAnswerMessage`, as soon as it ended.
 */
export interface WorkerBatchRequest {
  readonly jobs: readonly WorkerJobRequest[];
  /** The jobs' control slots (`JobControl`), the one thing both threads see at once. */
  readonly control: SharedArrayBuffer;
}

/**
 * A thread's answer to `DESCRIBE_TASKS`: the worker tasks its module provides, without what cannot
 * cross threads (`backoff`, the schemas), with the JSON Schema of the payload where its schema
 * gives one (for the admin API).
 */
export type WorkerTaskDescriptions = (Omit<
  JobTaskOptions,
  'backoff' | 'payloadSchema' | 'resultSchema'
> & {
  readonly payloadJsonSchema?: Record<string, unknown>;
})[];

/** The fields of a `JobSuspension` that cross back: an error's own fields do not survive the copy. */
export type SuspensionFields = Pick<
  JobSuspension,
  'step' | 'position' | 'seconds' | 'event' | 'jobs'
>;

/** The fields of a task's error that cross back: its class does not (a thread's realm is its own). */
export interface ThreadErrorFields {
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
}

/**
 * How a job's task ended in its thread (the handler ran): how the attempt ended, decided in the
 * thread (where the result is checked and the task's `backoff` lives), and the last progress value.
 * Progress messages travel on their own channel, which may deliver them after this outcome: the
 * last one comes with it, so that it is never lost.
 */
export interface WorkerJobOutcome {
  readonly ending:
    | Exclude<AttemptEnding, { outcome: 'failed' | 'suspended' }>
    | {
        readonly outcome: 'failed';
        readonly error: ThreadErrorFields;
        readonly retry: RetryDecision;
      }
    | { readonly outcome: 'suspended'; readonly suspension: SuspensionFields };
  readonly progress?: string;
}

/** How one job of a batch ended: its outcome, or an error that kept its task from running. */
export type WorkerJobAnswer =
  | { readonly key: number; readonly outcome: WorkerJobOutcome }
  | { readonly key: number; readonly error: ThreadErrorFields };

/**
 * What a thread sends, on its poolifier message port, as soon as a job ended: before it starts the
 * next job, which may hold its CPU for long (see `ThreadBatchRunner`).
 */
export interface WorkerAnswerMessage {
  readonly answer: WorkerJobAnswer;
}

/** A `ctx.reportProgress` value sent from a thread on `WorkerThreadData.progressChannel`. */
export interface WorkerProgressMessage {
  readonly id: string;
  readonly attempt: number;
  /** The value as JSON, checked in the thread. */
  readonly progress: string;
}
