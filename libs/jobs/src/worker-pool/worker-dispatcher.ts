import type { Worker } from 'node:worker_threads';
import type { Logger } from '@nestjs/common';
import type { FixedThreadPool } from 'poolifier';
import type { AttemptAbortController } from '../attempt/attempt-abort-controller.js';
import type { AttemptJob } from '../attempt/attempt-job.js';
import { runWithTimeout } from '../attempt/run-with-timeout.js';
import { toError } from '../common/errors.js';
import {
  JobCancelledError,
  JobsShutdownError,
  WorkerDiedError,
  WorkerPoolStoppedError,
  WorkerUnresponsiveError,
} from '../errors/jobs.errors.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { threadOf } from './thread-registry.js';
import type { Dispatch, ThreadRegistry } from './thread-registry.js';
import { WaitQueue } from './wait-queue.js';
import {
  CONTROL_SIGNAL,
  CONTROL_SLOTS,
  CONTROL_STARTED,
  RUN_TASK,
  SIGNAL_CANCELLED,
  SIGNAL_SHUTDOWN,
  SIGNAL_TIMEOUT,
  STARTED_GAVE_UP,
  STARTED_NO,
  whenChanged,
} from './worker-protocol.js';
import type { WorkerJobOutcome, WorkerJobRequest } from './worker-protocol.js';

/** The poolifier pool, dynamic or fixed (a fixed pool is the dynamic one's base class). */
export type ThreadPool = FixedThreadPool<WorkerJobRequest | undefined, unknown>;

/**
 * How often waiting calls re-check for a free thread when no event said one freed: a safety net
 * only. Every change that frees a thread has an event here (a call settling, a thread exiting, a
 * booted thread's ready message), so the net should never find anything to send.
 */
const MISSED_WAKE_CHECK_MS = 1000;

/**
 * Hands calls to the pool's threads, one job per thread, and bounds each attempt in time.
 *
 * poolifier hands a task to a busy thread when none is idle and it cannot add one (or its
 * replacement for a dead thread is still booting), where the task would wait behind another job
 * and die with it; so a call is sent only when a thread is idle or poolifier will add one: one job
 * per thread, which is also what makes a death attributable to one job. Calls waiting for a thread
 * wait here, first come, first served (so jobs start in the order the runner claimed them), woken
 * by the events that free a thread, and `taskTimeout` starts when a thread starts the task. A task
 * gets only its data, so `ctx.signal` travels through the call's shared control array.
 */
export class WorkerDispatcher {
  private pool?: ThreadPool;
  private closed = false;
  private readonly waiting: WaitQueue;

  constructor(
    private readonly options: ResolvedJobsOptions,
    private readonly threads: ThreadRegistry,
    logger: Logger,
  ) {
    this.waiting = new WaitQueue(
      () => this.freeThread() !== undefined,
      MISSED_WAKE_CHECK_MS,
      (sent) => logger.debug(`${sent} waiting call(s) found a free thread no event announced`),
    );
  }

  attach(pool: ThreadPool): void {
    this.pool = pool;
  }

  /**
   * Runs one attempt in a thread, under the two ceilings the seed had: `timeout` (counted from when
   * the thread starts the task) aborts the task's signal, and `controller` may abort it sooner (at
   * shutdown, or on a cancel); the thread then has `workerTimeoutGrace` to answer, after which the attempt fails as
   * unresponsive and the thread is terminated. Settles with the abort reason once aborted, like an
   * in-process task; otherwise with the thread's account of how the task ended.
   */
  async run(
    job: AttemptJob,
    timeout: number,
    controller: AttemptAbortController,
  ): Promise<WorkerJobOutcome> {
    const control = new Int32Array(
      new SharedArrayBuffer(CONTROL_SLOTS * Int32Array.BYTES_PER_ELEMENT),
    );
    const request: WorkerJobRequest = {
      task: job.task,
      payload: job.payload,
      id: job.id,
      attempt: job.attempt,
      maxRetries: job.maxRetries,
      timeout,
      maxResultBytes: this.options.maxResultBytes,
      control: control.buffer as SharedArrayBuffer,
    };
    const { signal } = controller;
    const forwardAbort = () => {
      Atomics.store(control, CONTROL_SIGNAL, signalCode(signal.reason));
      Atomics.notify(control, CONTROL_SIGNAL);
    };
    signal.addEventListener('abort', forwardAbort, { once: true });
    let dispatch: Dispatch | undefined;
    const answer = this.call(
      request,
      RUN_TASK,
      control,
      signal,
      (registered) => (dispatch = registered),
    );
    answer.catch(() => undefined);
    try {
      await this.untilStarted(control, answer, signal);
      return (await runWithTimeout(answer, timeout, controller)) as WorkerJobOutcome;
    } catch (err) {
      if (!signal.aborted || !dispatch) throw err;
      if (await settlesWithin(answer, this.options.workerTimeoutGrace * 1000)) {
        // A thread that died in the grace says more about the attempt than its timeout does.
        throw (
          (await answer.then(
            () => undefined,
            (late: unknown) => (late instanceof WorkerDiedError ? late : undefined),
          )) ?? err
        );
      }
      const threadId = threadOf(dispatch);
      const unresponsive = new WorkerUnresponsiveError(
        threadId,
        timeout,
        this.options.workerTimeoutGrace,
      );
      dispatch.fail(unresponsive);
      if (threadId !== undefined) await this.threads.terminate(threadId);
      throw unresponsive;
    } finally {
      signal.removeEventListener('abort', forwardAbort);
    }
  }

  /**
   * Sends one task function call when a thread is idle, registered so that its thread's death or
   * the pool's stop settles it.
   */
  async call(
    data: WorkerJobRequest | undefined,
    name: string,
    control?: Int32Array,
    signal?: AbortSignal,
    registered?: (dispatch: Dispatch) => void,
  ): Promise<unknown> {
    let fail!: (err: Error) => void;
    const failed = new Promise<never>((_resolve, reject) => (fail = reject));
    const dispatch: Dispatch = { control, fail };
    this.threads.track(dispatch);
    registered?.(dispatch);
    try {
      return await Promise.race([this.send(dispatch, data, name, signal), failed]);
    } finally {
      this.threads.untrack(dispatch);
      // A call failed while it waited (its attempt gave up) must not take a thread later.
      this.waiting.withdraw(dispatch, () => new WorkerPoolStoppedError());
    }
  }

  /** Sends the waiting calls a thread can take now: whoever frees a thread calls this. */
  serve(): void {
    this.waiting.serve();
  }

  /**
   * Serves the waiting calls once a (re)started thread is ready. poolifier marks a thread ready when
   * its ready message arrives on the thread's message channel and emits nothing then (its pool
   * `ready` event fires once, for the first threads), so this listens on that channel after
   * poolifier's own listener, which has marked the thread ready when this one runs. The message may
   * also come before `online`: then the thread is ready already.
   */
  whenReady(worker: Worker): void {
    const node = this.pool?.workerNodes.find((candidate) => candidate.worker === worker);
    const port = node?.messageChannel?.port1;
    if (!node || node.info.ready || !port) {
      this.waiting.serve();
      return;
    }
    const onMessage = () => {
      if (!node.info.ready) return;
      port.off('message', onMessage);
      this.waiting.serve();
    };
    port.on('message', onMessage);
  }

  /** Sends nothing more, and rejects every call still waiting for a thread: the pool is stopping. */
  close(): void {
    this.closed = true;
    this.waiting.rejectAll(() => new WorkerPoolStoppedError());
  }

  /**
   * Waits for a thread to start the task: `taskTimeout` bounds the task, not a thread's boot (which
   * a death's replacement, or a pool growing, makes the task wait for). The wait ends early when the
   * call settles or the attempt is aborted (shutdown), and is itself bounded by
   * `workerStartTimeout`, after which the clock starts anyway.
   */
  private async untilStarted(
    control: Int32Array,
    answer: Promise<unknown>,
    signal: AbortSignal,
  ): Promise<void> {
    let onAbort: (() => void) | undefined;
    try {
      await Promise.race([
        whenChanged(control, CONTROL_STARTED, STARTED_NO, this.options.workerStartTimeout * 1000),
        answer.then(
          () => undefined,
          () => undefined,
        ),
        new Promise<void>((resolve) => {
          onAbort = resolve;
          if (signal.aborted) resolve();
          else signal.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
      // Releases the pending wait, which would otherwise hold a timer until `workerStartTimeout`.
      if (
        Atomics.compareExchange(control, CONTROL_STARTED, STARTED_NO, STARTED_GAVE_UP) ===
        STARTED_NO
      ) {
        Atomics.notify(control, CONTROL_STARTED);
      }
    }
  }

  /** Queues the call behind those already waiting, and sends it when a thread can take it. */
  private send(
    dispatch: Dispatch,
    data: WorkerJobRequest | undefined,
    name: string,
    signal?: AbortSignal,
  ): Promise<unknown> {
    if (!this.pool || this.closed) return Promise.reject(new WorkerPoolStoppedError());
    return this.waiting.enqueue(dispatch, () => this.execute(dispatch, data, name), signal);
  }

  /** Hands the call to poolifier; only the wait queue calls it, once `freeThread` found one. */
  private execute(
    dispatch: Dispatch,
    data: WorkerJobRequest | undefined,
    name: string,
  ): Promise<unknown> {
    const pool = this.pool!;
    const { idle } = this.freeThread()!;
    // `execute` chooses synchronously, with poolifier's default strategy (least used): the first
    // idle thread, or else the thread it adds, which counts as ready at once and runs the task as
    // soon as it has booted. Either way the thread counts the task before `execute` returns, so the
    // queue's next `freeThread` already sees it busy.
    const answer = pool.execute(data, name).catch((thrown: unknown) => {
      throw fromThread(thrown);
    });
    dispatch.expectedThread = (idle ?? pool.workerNodes.at(-1))?.info.id;
    // poolifier counts the task done before it settles the call: the thread is idle by now.
    const wake = () => void this.waiting.serve();
    answer.then(wake, wake);
    return answer;
  }

  /**
   * The thread a call may be sent to now: an idle one, or none when poolifier will add one (every
   * thread ready and busy, and room to grow). poolifier adds a thread only then; a replacement for
   * a dead one is not ready until it has booted, and meanwhile `execute` would find no thread at all.
   */
  private freeThread(): { idle?: ThreadPool['workerNodes'][number] } | undefined {
    const pool = this.pool;
    if (!pool || this.closed) return undefined;
    const nodes = pool.workerNodes;
    const load = (node: (typeof nodes)[number]) =>
      node.usage.tasks.executing + node.usage.tasks.queued;
    const idle = nodes.find((node) => node.info.ready && load(node) === 0);
    if (idle) return { idle };
    const grows =
      nodes.length > 0 &&
      nodes.length < this.options.workers &&
      nodes.every((node) => node.info.ready && load(node) > 0);
    return grows ? {} : undefined;
  }
}

/**
 * A task's error, structured-cloned out of its thread (or its fields, as a `WorkerJobOutcome`
 * carries them). A cloned error's prototype is the receiving realm's `Error`, which is not the
 * caller's under a VM sandbox (Jest), so it is rebuilt from its fields.
 */
export function fromThread(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  const { message, name, stack } = (thrown ?? {}) as {
    message?: unknown;
    name?: unknown;
    stack?: unknown;
  };
  if (typeof message !== 'string') return toError(thrown);
  const err = new Error(message, { cause: thrown });
  if (typeof name === 'string') err.name = name;
  if (typeof stack === 'string') err.stack = stack;
  return err;
}

/** The abort reason as the thread rebuilds it: a timeout, unless shutdown or a cancel aborted. */
function signalCode(reason: unknown): number {
  if (reason instanceof JobsShutdownError) return SIGNAL_SHUTDOWN;
  if (reason instanceof JobCancelledError) return SIGNAL_CANCELLED;
  return SIGNAL_TIMEOUT;
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
