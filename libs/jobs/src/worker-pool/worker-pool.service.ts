import type { Worker } from 'node:worker_threads';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DynamicThreadPool, FixedThreadPool } from 'poolifier';
import { toError } from '../common/errors.js';
import {
  JobsShutdownError,
  WorkerDiedError,
  WorkerPoolBootError,
  WorkerPoolStoppedError,
  WorkerUnresponsiveError,
} from '../errors/jobs.errors.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import type { AttemptAbortController } from '../attempt/attempt-abort-controller.js';
import type { AttemptJob } from '../attempt/attempt-job.js';
import { runWithTimeout } from '../attempt/run-with-timeout.js';
import { WaitQueue } from './wait-queue.js';
import { resolveWorkerEntry } from './worker-entry.js';
import {
  CONTROL_SIGNAL,
  CONTROL_SLOTS,
  CONTROL_STARTED,
  CONTROL_THREAD,
  DESCRIBE_TASKS,
  RUN_TASK,
  SIGNAL_SHUTDOWN,
  SIGNAL_TIMEOUT,
  STARTED_GAVE_UP,
  STARTED_NO,
  whenChanged,
} from './worker-protocol.js';
import type {
  WorkerJobRequest,
  WorkerTaskDescriptions,
  WorkerThreadData,
} from './worker-protocol.js';

type Pool = FixedThreadPool<WorkerJobRequest | undefined, unknown>;

/** One call into the pool that has not answered yet. */
interface Dispatch {
  readonly control?: Int32Array;
  /** The thread the pool was about to hand it to, until the thread itself says it started. */
  expectedThread?: number;
  /** Settles the call when nothing else will: its thread died, hung, or the pool stopped. */
  readonly fail: (err: Error) => void;
}

/**
 * How often waiting calls re-check for a free thread when no event said one freed: a safety net
 * only. Every change that frees a thread has an event here (a call settling, a thread exiting, a
 * booted thread's ready message), so the net should never find anything to send.
 */
const MISSED_WAKE_CHECK_MS = 1000;

/**
 * The poolifier thread pool that runs `@JobTask({ worker: true })` tasks, and everything poolifier
 * 5.3.2 leaves to its user:
 * - a call whose thread dies (`process.exit`, an asynchronous throw, out of memory) never settles
 *   in poolifier, and `destroy()` leaves it pending; so every call here is registered, the thread
 *   running it is known (the thread writes its id into the call's shared control array as it
 *   starts), and the thread's `exit` fails the calls it held, with what its `error` event said;
 * - a task gets only its data, so `ctx.signal` travels through the same control array;
 * - poolifier hands a task to a busy thread when none is idle and it cannot add one (or its
 *   replacement for a dead thread is still booting), where the task would wait behind another
 *   job and die with it; so a call is sent only when a thread is idle or poolifier will add one:
 *   one job per thread, which is also what makes a death attributable to one job. Calls waiting
 *   for a thread wait here, first come, first served (so jobs start in the order the runner
 *   claimed them), woken by the events that free a thread, and `taskTimeout` starts when a thread
 *   starts the task.
 *
 * Started at module init when `workerModule` is set (one thread boots and reports the worker
 * tasks), grown to `workers` on demand (idle extra threads retire after poolifier's minute),
 * stopped after the runner drained.
 */
@Injectable()
export class WorkerPool {
  private readonly logger = new Logger('JobsWorkerPool');
  private pool?: Pool;
  private readonly threadIds = new WeakMap<Worker, number>();
  private readonly threads = new Map<number, Worker>();
  private readonly crashes = new Map<number, Error>();
  private readonly calls = new Set<Dispatch>();
  private stopping?: Promise<void>;
  private boot?: Dispatch;
  private readonly waiting = new WaitQueue(
    () => this.freeThread() !== undefined,
    MISSED_WAKE_CHECK_MS,
    (sent) => this.logger.debug(`${sent} waiting call(s) found a free thread no event announced`),
  );

  constructor(@Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions) {}

  get enabled(): boolean {
    return this.options.workerModule !== undefined;
  }

  /** Starts the pool's first thread and returns the worker tasks its module provides. */
  async start(): Promise<WorkerTaskDescriptions> {
    const { workerModule, workers, workerResourceLimits, workerExecArgv } = this.options;
    if (!workerModule) return [];
    const entry = resolveWorkerEntry(workerExecArgv);
    const workerData: WorkerThreadData = {
      moduleUrl: workerModule.url,
      exportName: workerModule.exportName,
    };
    const events = this.threadEvents();
    const poolOptions = {
      workerOptions: { workerData, execArgv: entry.execArgv, resourceLimits: workerResourceLimits },
      onlineHandler(this: Worker) {
        events.online(this);
      },
      errorHandler(this: Worker, err: Error) {
        events.crashed(this, err);
      },
      exitHandler(this: Worker, code: number) {
        events.exited(this, code);
      },
    };
    // `DynamicThreadPool(1, 1)` throws: a single thread is a fixed pool.
    this.pool =
      workers === 1
        ? new FixedThreadPool(1, entry.file, poolOptions)
        : new DynamicThreadPool(1, workers, entry.file, poolOptions);
    // Without a listener, a thread's uncaught error is re-thrown here and kills the host process.
    this.pool.emitter?.on('error', (err: unknown) =>
      this.logger.debug(`Pool error: ${toError(err).message}`),
    );
    try {
      // Until the first thread has described its module, any thread's death is the boot's failure
      // (a worker entry that cannot load would otherwise be restarted by poolifier forever).
      const described = await this.call(
        undefined,
        DESCRIBE_TASKS,
        undefined,
        undefined,
        (boot) => (this.boot = boot),
      );
      this.boot = undefined;
      return described as WorkerTaskDescriptions;
    } catch (err) {
      this.boot = undefined;
      await this.stop();
      throw new WorkerPoolBootError(
        `The workerModule ${workerModule.url} did not boot in a pool thread: ${toError(err).message}`,
        {
          cause: err,
        },
      );
    }
  }

  /**
   * Runs one attempt in a thread, under the two ceilings the seed had: `timeout` (counted from when
   * the thread starts the task) aborts the task's signal, and `controller` may abort it sooner, at
   * shutdown; the thread then has `workerTimeoutGrace` to answer, after which the attempt fails as
   * unresponsive and the thread is terminated. Settles with the abort reason once aborted, like an
   * in-process task.
   */
  async run(job: AttemptJob, timeout: number, controller: AttemptAbortController): Promise<void> {
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
      control: control.buffer as SharedArrayBuffer,
    };
    const { signal } = controller;
    const forwardAbort = () => {
      Atomics.store(
        control,
        CONTROL_SIGNAL,
        signal.reason instanceof JobsShutdownError ? SIGNAL_SHUTDOWN : SIGNAL_TIMEOUT,
      );
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
      await runWithTimeout(answer, timeout, controller);
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
      if (threadId !== undefined) await this.terminate(threadId);
      throw unresponsive;
    } finally {
      signal.removeEventListener('abort', forwardAbort);
    }
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

  /**
   * Fails every call still waiting (poolifier's `destroy()` leaves them pending), then destroys the
   * pool: it gives each thread a second to acknowledge, then terminates it, so a thread that never
   * yields delays shutdown by that second only. Idempotent.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.waiting.rejectAll(() => new WorkerPoolStoppedError());
      for (const call of [...this.calls]) call.fail(new WorkerPoolStoppedError());
      await this.pool
        ?.destroy()
        .catch((err: unknown) =>
          this.logger.warn(`Destroying the worker pool: ${toError(err).message}`),
        );
    })();
    return this.stopping;
  }

  /**
   * Sends one task function call when a thread is idle, registered so that its thread's death or
   * the pool's stop settles it.
   */
  private async call(
    data: WorkerJobRequest | undefined,
    name: string,
    control?: Int32Array,
    signal?: AbortSignal,
    registered?: (dispatch: Dispatch) => void,
  ): Promise<unknown> {
    let fail!: (err: Error) => void;
    const failed = new Promise<never>((_resolve, reject) => (fail = reject));
    const dispatch: Dispatch = { control, fail };
    this.calls.add(dispatch);
    registered?.(dispatch);
    try {
      return await Promise.race([this.send(dispatch, data, name, signal), failed]);
    } finally {
      this.calls.delete(dispatch);
      // A call failed while it waited (its attempt gave up) must not take a thread later.
      this.waiting.withdraw(dispatch, () => new WorkerPoolStoppedError());
    }
  }

  /** Queues the call behind those already waiting, and sends it when a thread can take it. */
  private send(
    dispatch: Dispatch,
    data: WorkerJobRequest | undefined,
    name: string,
    signal?: AbortSignal,
  ): Promise<unknown> {
    if (!this.pool || this.stopping) return Promise.reject(new WorkerPoolStoppedError());
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
  private freeThread(): { idle?: Pool['workerNodes'][number] } | undefined {
    const pool = this.pool;
    if (!pool || this.stopping) return undefined;
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

  private async terminate(threadId: number): Promise<void> {
    await this.threads
      .get(threadId)
      ?.terminate()
      .catch(() => undefined);
  }

  /**
   * Serves the waiting calls once a (re)started thread is ready. poolifier marks a thread ready when
   * its ready message arrives on the thread's message channel and emits nothing then (its pool
   * `ready` event fires once, for the first threads), so this listens on that channel after
   * poolifier's own listener, which has marked the thread ready when this one runs. The message may
   * also come before `online`: then the thread is ready already.
   */
  private whenReady(worker: Worker): void {
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

  /** Handlers of poolifier's per-thread events, which it calls with the thread as `this`. */
  private threadEvents() {
    return {
      online: (worker: Worker) => {
        this.threadIds.set(worker, worker.threadId);
        this.threads.set(worker.threadId, worker);
        this.whenReady(worker);
      },
      crashed: (worker: Worker, err: Error) => {
        const id = this.threadIds.get(worker) ?? worker.threadId;
        this.crashes.set(id, err);
        this.logger.warn(`Worker thread ${id} crashed: ${err.message}`);
      },
      exited: (worker: Worker, code: number) => {
        // poolifier's own exit handler runs after this one: it drops the thread and starts any
        // replacement, after which the pool may grow, or wait for the replacement's ready message.
        queueMicrotask(() => this.waiting.serve());
        // `worker.threadId` is -1 once the thread is gone: use the id seen when it came online.
        const id = this.threadIds.get(worker);
        if (id === undefined) return;
        this.threads.delete(id);
        const crash = this.crashes.get(id);
        this.crashes.delete(id);
        this.boot?.fail(new WorkerDiedError(id, code, crash));
        for (const call of [...this.calls]) {
          if (threadOf(call) === id) call.fail(new WorkerDiedError(id, code, crash));
        }
      },
    };
  }
}

/**
 * A task's error, structured-cloned out of its thread. Its prototype is the receiving realm's
 * `Error`, which is not the caller's under a VM sandbox (Jest), so it is rebuilt from its fields.
 */
function fromThread(thrown: unknown): Error {
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

function threadOf(dispatch: Dispatch): number | undefined {
  const started = dispatch.control ? Atomics.load(dispatch.control, CONTROL_THREAD) : 0;
  return started || dispatch.expectedThread;
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
