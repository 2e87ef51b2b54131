import type { Worker } from 'node:worker_threads';
import type { Logger } from '@nestjs/common';
import type { AttemptAbortController } from '../attempt/attempt-abort-controller.js';
import type { AttemptJob } from '../attempt/attempt-job.js';
import { toError } from '../common/errors.js';
import {
  JobCancelledError,
  JobsShutdownError,
  WorkerDiedError,
  WorkerPoolStoppedError,
} from '../errors/jobs.errors.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { pickSteal, planBatches } from './batch-plan.js';
import { CallQueue } from './call-queue.js';
import type { PoolifierPool } from './poolifier-adapter.js';
import { ThreadCall } from './thread-call.js';
import { ThreadDeadlines } from './thread-deadlines.js';
import type { ThreadRegistry } from './thread-registry.js';
import { JobControl, SIGNAL_CANCELLED, SIGNAL_SHUTDOWN, SIGNAL_TIMEOUT } from './job-control.js';
import type {
  WorkerJobAnswer,
  WorkerJobOutcome,
  WorkerTaskDescriptions,
} from './worker-protocol.js';

/**
 * How often waiting calls re-check for a free thread when no event said one freed: a safety net
 * only. Every change that frees a thread has an event here (a batch settling, a thread exiting, a
 * booted thread's ready message), so the net should never find anything to send.
 */
const MISSED_WAKE_CHECK_MS = 1000;

/**
 * Hands attempts to the pool's threads in batches; their clocks are `ThreadDeadlines`', the pool
 * itself `PoolifierPool`'s.
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
 * A task gets only its data, so `ctx.signal` travels through the job's shared control slots. A
 * thread that dies fails the job it was running; the jobs it held unstarted go back to the queue.
 */
export class WorkerDispatcher {
  private pool?: PoolifierPool;
  private closed = false;
  private nextSeq = 0;
  private nextKey = 0;
  private serveScheduled = false;
  private readonly waiting: CallQueue<ThreadCall>;
  /** Calls sent to a thread and not answered, by the key of their send. */
  private readonly sent = new Map<number, ThreadCall>();
  private readonly deadlines: ThreadDeadlines;

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
    this.deadlines = new ThreadDeadlines(options, async (call, unresponsive) => {
      const { thread } = call;
      this.sent.delete(call.key);
      call.fail(unresponsive);
      if (thread !== undefined) await this.threads.terminate(thread);
    });
  }

  attach(pool: PoolifierPool): void {
    this.pool = pool;
  }

  /**
   * Runs one attempt in a thread, under its deadlines (`ThreadDeadlines.answer`): `timeout`
   * (counted from when the thread starts the task) aborts the task's signal, `controller` may abort
   * it sooner, and a thread that does not answer in its grace is terminated.
   */
  run(
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
    return this.deadlines.answer(call, timeout, controller, (reason) => this.abort(call, reason));
  }

  /**
   * The first thread's boot: asks it for the worker tasks its module provides. Any thread's death
   * fails it until it answers, and so does `workerStartTimeout` passing.
   */
  async describe(): Promise<WorkerTaskDescriptions> {
    if (!this.pool) throw new WorkerPoolStoppedError();
    let died!: (death: WorkerDiedError) => void;
    const death = new Promise<never>((_resolve, reject) => (died = reject));
    this.threads.failOnAnyDeath(died);
    try {
      return (await this.deadlines.boot(
        Promise.race([
          this.pool.describeTasks().catch((thrown: unknown) => {
            throw fromThread(thrown);
          }),
          death,
        ]),
      )) as WorkerTaskDescriptions;
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
      const idle = pool.threadLoads().filter((thread) => thread.ready && !thread.busy).length;
      for (let i = 0; i < idle; i++) {
        const stolen = this.takeBack();
        if (stolen.length === 0) break;
        this.waiting.requeue(stolen);
        sent += this.sendWaiting(pool);
      }
    }
    return sent;
  }

  /** Serves the waiting calls once a (re)started thread is ready (`PoolifierPool.whenReady`). */
  whenReady(worker: Worker): void {
    if (this.pool) this.pool.whenReady(worker, () => this.serveSoon());
    else this.serveSoon();
  }

  /** A job's answer from its thread: settles its call, unless the call was settled otherwise. */
  answered(answer: WorkerJobAnswer): void {
    const call = this.sent.get(answer.key);
    if (!call) return;
    this.sent.delete(answer.key);
    if ('outcome' in answer) call.resolve(answer.outcome);
    else call.fail(fromThread(answer.error));
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

  private sendWaiting(pool: PoolifierPool): number {
    const plan = planBatches(pool.threadLoads(), this.waiting.size, this.options.workers);
    let sent = 0;
    for (const size of plan) sent += this.sendBatch(pool, this.waiting.take(size));
    return sent;
  }

  /** Hands `calls` to one thread, in one message (`PoolifierPool.sendBatch`). */
  private sendBatch(pool: PoolifierPool, calls: readonly ThreadCall[]): number {
    const control = JobControl.buffer(calls.length);
    const jobs = calls.map((call, slot) =>
      call.send(++this.nextKey, slot, new JobControl(control, slot)),
    );
    for (const call of calls) this.sent.set(call.key, call);
    const batch = pool.sendBatch({ jobs, control });
    if (!batch) {
      // poolifier found no thread to take it (the plan says one is free, so it should not happen):
      // nothing was posted, and its call would never settle. The calls wait for the next serve.
      for (const call of calls) {
        this.sent.delete(call.key);
        call.requeued();
      }
      this.waiting.requeue(calls);
      return 0;
    }
    this.threads.know(batch.worker);
    for (const call of calls) call.thread = batch.threadId;
    // The batch settles once its jobs ended or were taken back: the thread is free again. It fails
    // only if poolifier refused it, and never settles if the thread died (see `threadExited`).
    batch.done.then(
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
