import type { MessagePort, Worker } from 'node:worker_threads';
import type { Logger } from '@nestjs/common';
import type { FixedThreadPool } from 'poolifier';
import type { AttemptAbortController } from '../attempt/attempt-abort-controller.js';
import type { AttemptJob } from '../attempt/attempt-job.js';
import { toError } from '../common/errors.js';
import {
  JobCancelledError,
  JobTimeoutError,
  JobsShutdownError,
  WorkerDiedError,
  WorkerPoolStoppedError,
  WorkerUnresponsiveError,
} from '../errors/jobs.errors.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { pickSteal, planBatches } from './batch-plan.js';
import { CallQueue } from './call-queue.js';
import { ThreadCall } from './thread-call.js';
import type { ThreadRegistry } from './thread-registry.js';
import {
  JobControl,
  SIGNAL_CANCELLED,
  SIGNAL_SHUTDOWN,
  SIGNAL_TIMEOUT,
  nowMs,
} from './job-control.js';
import { DESCRIBE_TASKS, RUN_BATCH } from './worker-protocol.js';
import type {
  WorkerBatchRequest,
  WorkerJobOutcome,
  WorkerAnswerMessage,
  WorkerTaskDescriptions,
} from './worker-protocol.js';

/** The poolifier pool, dynamic or fixed (a fixed pool is the dynamic one's base class). */
export type ThreadPool = FixedThreadPool<WorkerBatchRequest | undefined, unknown>;
type PoolNode = ThreadPool['workerNodes'][number];

/**
 * How often waiting calls re-check for a free thread when no event said one freed: a safety net
 * only. Every change that frees a thread has an event here (a batch settling, a thread exiting, a
 * booted thread's ready message), so the net should never find anything to send.
 */
const MISSED_WAKE_CHECK_MS = 1000;

/**
 * Hands attempts to the pool's threads in batches, and bounds each attempt in time.
 *
 * The attempts handed over in one turn of the event loop (what a claim brings back) wait here,
 * first come, first served, and go out together at the end of the turn: one message per thread
 * (`planBatches`), whose jobs the thread starts one at a time, in order, answering each as it ends
 * (`ThreadBatchRunner`), so that the trip to a thread is paid per batch, not per job. A batch
 * goes only to an idle thread, or to one the pool adds: a thread runs one job at a time, and one
 * with a batch in flight would start another batch's jobs only after it. What an idle thread could
 * start while another thread still holds it unstarted, it takes back (`pickSteal`): the control
 * slot of each job says atomically whether its thread started it or the main thread withdrew it.
 *
 * `taskTimeout` starts when a thread starts the task. A task gets only its data, so `ctx.signal`
 * travels through the job's shared control slots. A thread that dies fails the job it was running;
 * the jobs it held unstarted go back to the queue. A job whose thread has sent its answer (its
 * control slot says it ended) is past its timeout and never a reason to kill its thread, even while
 * this thread, busy, has not read that answer yet.
 */
export class WorkerDispatcher {
  private pool?: ThreadPool;
  private closed = false;
  private nextSeq = 0;
  private nextKey = 0;
  private serveScheduled = false;
  private readonly waiting: CallQueue<ThreadCall>;
  /** Calls sent to a thread and not answered, by the key of their send. */
  private readonly sent = new Map<number, ThreadCall>();
  private readonly listening = new WeakSet<MessagePort>();

  constructor(
    private readonly options: ResolvedJobsOptions,
    private readonly threads: ThreadRegistry,
    logger: Logger,
  ) {
    this.waiting = new CallQueue(
      MISSED_WAKE_CHECK_MS,
      () => this.serve(),
      (sent) => logger.debug(`${sent} waiting call(s) found a free thread no event announced`),
    );
  }

  attach(pool: ThreadPool): void {
    this.pool = pool;
  }

  /**
   * Runs one attempt in a thread, under the two ceilings the seed had: `timeout` (counted from when
   * the thread starts the task) aborts the task's signal, and `controller` may abort it sooner (at
   * shutdown, or on a cancel); the thread then has `workerTimeoutGrace` to answer, after which the
   * attempt fails as unresponsive and the thread is terminated. Settles with the abort reason once
   * aborted, like an in-process task; otherwise with the thread's account of how the task ended.
   */
  async run(
    job: AttemptJob,
    timeout: number,
    controller: AttemptAbortController,
  ): Promise<WorkerJobOutcome> {
    const call = new ThreadCall(this.nextSeq++, job, timeout);
    if (!this.pool || this.closed) call.fail(new WorkerPoolStoppedError());
    else {
      this.waiting.push(call);
      this.serveSoon();
    }
    let aborted = false;
    const stopListening = controller.onAbort((reason) => {
      aborted = true;
      this.abort(call, reason);
    });
    try {
      return await this.answerInTime(call, timeout, controller);
    } catch (err) {
      if (!aborted) throw err;
      // An ended job's answer is on its way: its thread has moved on, and is not to be killed.
      const graceMs = this.options.workerTimeoutGrace * 1000;
      if ((await settlesWithin(call.answer, graceMs)) || call.hasEnded()) {
        // A thread that died in the grace says more about the attempt than its timeout does.
        throw (
          (await call.answer.then(
            () => undefined,
            (late: unknown) => (late instanceof WorkerDiedError ? late : undefined),
          )) ?? err
        );
      }
      const { thread } = call;
      const unresponsive = new WorkerUnresponsiveError(
        thread,
        timeout,
        this.options.workerTimeoutGrace,
      );
      this.sent.delete(call.key);
      call.fail(unresponsive);
      if (thread !== undefined) await this.threads.terminate(thread);
      throw unresponsive;
    } finally {
      stopListening();
    }
  }

  /**
   * The first thread's boot: asks it for the worker tasks its module provides. Any thread's death
   * fails it until it answers.
   */
  async describe(): Promise<WorkerTaskDescriptions> {
    if (!this.pool) throw new WorkerPoolStoppedError();
    let died!: (death: WorkerDiedError) => void;
    const death = new Promise<never>((_resolve, reject) => (died = reject));
    this.threads.failOnAnyDeath(died);
    try {
      return (await Promise.race([
        this.pool.execute(undefined, DESCRIBE_TASKS).catch((thrown: unknown) => {
          throw fromThread(thrown);
        }),
        death,
      ])) as WorkerTaskDescriptions;
    } finally {
      this.threads.failOnAnyDeath(undefined);
    }
  }

  /**
   * Sends the waiting calls the threads can take now, and lets idle threads take back what others
   * hold unstarted; returns how many calls it sent. Whoever may have freed a thread calls this.
   */
  serve(): number {
    const pool = this.pool;
    if (!pool || this.closed) return 0;
    let sent = this.sendWaiting(pool);
    if (this.waiting.size === 0) {
      const idle = pool.workerNodes.filter((node) => node.info.ready && load(node) === 0).length;
      for (let i = 0; i < idle; i++) {
        const stolen = this.takeBack();
        if (stolen.length === 0) break;
        this.waiting.requeue(stolen);
        sent += this.sendWaiting(pool);
      }
    }
    return sent;
  }

  /**
   * Serves the waiting calls once a (re)started thread is ready, and listens to its answers.
   * poolifier marks a thread ready when its ready message arrives on the thread's message channel
   * and emits nothing then (its pool `ready` event fires once, for the first threads), so this
   * listens on that channel after poolifier's own listener, which has marked the thread ready when
   * this one runs. The message may also come before `online`: then the thread is ready already.
   */
  whenReady(worker: Worker): void {
    const node = this.pool?.workerNodes.find((candidate) => candidate.worker === worker);
    const port = node?.messageChannel?.port1;
    if (port) this.listen(port);
    if (!node || node.info.ready || !port) {
      this.serveSoon();
      return;
    }
    const onMessage = () => {
      if (!node.info.ready) return;
      port.off('message', onMessage);
      this.serveSoon();
    };
    port.on('message', onMessage);
  }

  /**
   * Settles what thread `threadId` held when it died: the job it had started fails with how it died
   * (it is retried as any failure is); the jobs it had not started go back to the queue, in their
   * places, for another thread.
   */
  threadExited(threadId: number, death: WorkerDiedError): void {
    const unstarted: ThreadCall[] = [];
    for (const [key, call] of this.sent) {
      if (call.thread !== threadId) continue;
      this.sent.delete(key);
      if (call.control!.withdraw()) {
        call.requeued();
        unstarted.push(call);
      } else {
        call.fail(death);
      }
    }
    this.waiting.requeue(unstarted);
    this.serve();
  }

  /**
   * Sends nothing more, and fails every call waiting or running: the pool is stopping (poolifier's
   * `destroy()` would leave them pending).
   */
  close(): void {
    this.closed = true;
    for (const call of this.waiting.take(this.waiting.size))
      call.fail(new WorkerPoolStoppedError());
    for (const call of this.sent.values()) call.fail(new WorkerPoolStoppedError());
    this.sent.clear();
  }

  private serveSoon(): void {
    if (this.serveScheduled) return;
    this.serveScheduled = true;
    // At the end of this turn, so that the calls handed over in it go out together.
    queueMicrotask(() => {
      this.serveScheduled = false;
      this.serve();
    });
  }

  private sendWaiting(pool: ThreadPool): number {
    const nodes = pool.workerNodes;
    const plan = planBatches(
      nodes.map((node) => ({ ready: node.info.ready, busy: load(node) > 0 })),
      this.waiting.size,
      this.options.workers,
    );
    let sent = 0;
    for (const size of plan) sent += this.sendBatch(pool, this.waiting.take(size));
    return sent;
  }

  /**
   * Hands `calls` to the thread poolifier chooses, in one message. poolifier chooses the thread and
   * counts the task on it synchronously, inside `execute`: the thread whose count went up (or the
   * one it added) holds the batch.
   */
  private sendBatch(pool: ThreadPool, calls: readonly ThreadCall[]): number {
    const before = new Map(pool.workerNodes.map((node) => [node, load(node)]));
    const control = JobControl.buffer(calls.length);
    const jobs = calls.map((call, slot) =>
      call.send(++this.nextKey, slot, new JobControl(control, slot)),
    );
    for (const call of calls) this.sent.set(call.key, call);
    const done = pool.execute({ jobs, control }, RUN_BATCH);
    const node = pool.workerNodes.find(
      (candidate) => load(candidate) > (before.get(candidate) ?? 0),
    );
    if (!node) {
      // poolifier found no thread to take it (the plan says one is free, so it should not happen):
      // nothing was posted, and its call would never settle. The calls wait for the next serve.
      done.catch(() => undefined);
      for (const call of calls) {
        this.sent.delete(call.key);
        call.requeued();
      }
      this.waiting.requeue(calls);
      return 0;
    }
    this.threads.know(node.worker as Worker);
    if (node.messageChannel) this.listen(node.messageChannel.port1);
    for (const call of calls) call.thread = node.info.id;
    // The batch settles once its jobs ended or were taken back: the thread is free again. It fails
    // only if poolifier refused it, and never settles if the thread died (see `threadExited`).
    done.then(
      () => this.serveSoon(),
      (thrown: unknown) => {
        const err = fromThread(thrown);
        for (const call of calls) {
          if (this.sent.get(call.key) !== call) continue;
          this.sent.delete(call.key);
          call.fail(err);
        }
        this.serveSoon();
      },
    );
    return calls.length;
  }

  /** The unstarted calls an idle thread takes back, withdrawn from the thread that held them. */
  private takeBack(): ThreadCall[] {
    const unstarted = [...this.sent.values()].filter(
      (call) => call.thread !== undefined && call.startedAt() === undefined,
    ) as (ThreadCall & { thread: number })[];
    const taken: ThreadCall[] = [];
    for (const call of pickSteal(unstarted)) {
      if (!call.control!.withdraw()) continue;
      this.sent.delete(call.key);
      call.requeued();
      taken.push(call);
    }
    return taken;
  }

  /** Hears the answers a thread sends on its poolifier port (`WorkerAnswerMessage`). */
  private listen(port: MessagePort): void {
    if (this.listening.has(port)) return;
    this.listening.add(port);
    port.on('message', (message: { taskId?: unknown; data?: unknown }) => {
      if (message.taskId !== undefined) return;
      const answer = (message.data as Partial<WorkerAnswerMessage> | undefined)?.answer;
      const call = answer && this.sent.get(answer.key);
      if (!call) return;
      this.sent.delete(answer.key);
      if ('outcome' in answer) call.resolve(answer.outcome);
      else call.fail(fromThread(answer.error));
    });
  }

  /** Takes an aborted call back if no thread started it; else tells its thread. */
  private abort(call: ThreadCall, reason: unknown): void {
    if (call.state === 'waiting') {
      this.waiting.remove(call);
      call.fail(toError(reason));
    } else if (call.state === 'sent') {
      const control = call.control!;
      if (control.withdraw()) {
        this.sent.delete(call.key);
        call.fail(toError(reason));
        return;
      }
      control.abort(signalCode(reason));
    }
  }

  /**
   * Waits for the thread's answer, and aborts `controller` once `timeout` has passed since a thread
   * started the task: a job waiting for a thread (in the queue, behind another job of its batch, or
   * for a thread to boot) has not started, and its clock does not run, until `workerStartTimeout`,
   * after which it runs anyway. The thread writes when it started the job in its control slots; the
   * one timer reads it when it fires, and waits on until the deadline it finds.
   */
  private answerInTime(
    call: ThreadCall,
    timeout: number,
    controller: AttemptAbortController,
  ): Promise<WorkerJobOutcome> {
    return new Promise<WorkerJobOutcome>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const settle = () => {
        settled = true;
        clearTimeout(timer);
        stopListening();
      };
      const check = () => {
        // A job that ended is not timed out: its answer is on its way, and settles this.
        if (settled || call.hasEnded()) return;
        const left = this.timeLeft(call, timeout);
        if (left > 0) timer = setTimeout(check, left);
        else controller.abort(new JobTimeoutError(timeout));
      };
      const stopListening = controller.onAbort((reason) => {
        settle();
        reject(reason);
      });
      call.answer.then(
        (outcome) => {
          settle();
          resolve(outcome);
        },
        (err: unknown) => {
          settle();
          reject(err);
        },
      );
      check();
    });
  }

  /** Milliseconds until `call` times out, at the earliest: if it has not started, it may start now. */
  private timeLeft(call: ThreadCall, timeout: number): number {
    const now = nowMs();
    const clockStartsAnyway = call.since + this.options.workerStartTimeout * 1000;
    const startedAt = call.startedAt();
    if (startedAt === undefined && now < clockStartsAnyway) return timeout * 1000;
    return Math.min(startedAt ?? clockStartsAnyway, clockStartsAnyway) + timeout * 1000 - now;
  }
}

/** What poolifier counts on a thread: tasks running and queued there. */
function load(node: PoolNode): number {
  return node.usage.tasks.executing + node.usage.tasks.queued;
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
