import type { AttemptAbortController } from '../attempt/attempt-abort-controller.js';
import {
  JobTimeoutError,
  WorkerDiedError,
  WorkerUnresponsiveError,
} from '../errors/jobs.errors.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { nowMs } from './job-control.js';
import type { ThreadCall } from './thread-call.js';
import type { WorkerJobOutcome } from './worker-protocol.js';

/**
 * The clocks of the pool's threads, apart from how calls reach them: an attempt's `taskTimeout`
 * (counted from when a thread starts it, or from `workerStartTimeout` after it was handed over,
 * whichever comes first), the `workerTimeoutGrace` an aborted attempt's thread has to answer before
 * it counts as unresponsive, and the boot's `workerStartTimeout`.
 */
export class ThreadDeadlines {
  constructor(
    private readonly options: Pick<
      ResolvedJobsOptions,
      'workerStartTimeout' | 'workerTimeoutGrace'
    >,
    /**
     * Gives up on the call of an unresponsive thread: fails it with `err`, and terminates the
     * thread. The attempt then fails with `err`.
     */
    private readonly giveUp: (call: ThreadCall, err: WorkerUnresponsiveError) => Promise<void>,
  ) {}

  /**
   * Waits for `call`'s answer under the two ceilings the seed had: `timeout` aborts `controller`
   * (see `answerInTime`), which may also abort sooner (at shutdown, or on a cancel); `onAbort`
   * hears the reason first, to take the call back or tell its thread. The thread then has
   * `workerTimeoutGrace` to answer, after which the attempt fails as unresponsive. Settles with the
   * abort reason once aborted, like an in-process task; otherwise with the thread's account.
   */
  async answer(
    call: ThreadCall,
    timeout: number,
    controller: AttemptAbortController,
    onAbort: (reason: unknown) => void,
  ): Promise<WorkerJobOutcome> {
    let aborted = false;
    const stopListening = controller.onAbort((reason) => {
      aborted = true;
      onAbort(reason);
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
      const unresponsive = new WorkerUnresponsiveError(
        call.thread,
        timeout,
        this.options.workerTimeoutGrace,
      );
      await this.giveUp(call, unresponsive);
      throw unresponsive;
    } finally {
      stopListening();
    }
  }

  /**
   * The boot's wait for the first thread's description of its module: rejects, saying what to do,
   * if it has not settled within `workerStartTimeout`. A thread that never answers (its module's
   * top-level `await`, or a provider, never settles) would hang the boot.
   */
  async boot<T>(description: Promise<T>): Promise<T> {
    const seconds = this.options.workerStartTimeout;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        description,
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => reject(new Error(startTimeoutMessage(seconds))), seconds * 1000);
        }),
      ]);
    } finally {
      clearTimeout(timer);
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

function startTimeoutMessage(seconds: number): string {
  return (
    `its thread did not answer within workerStartTimeout (${seconds}s): the module never ` +
    "finished loading or booting (a top-level await, or a provider's async factory or " +
    'onModuleInit, that never settles). Find what it waits for, or raise workerStartTimeout if ' +
    'its boot only needs longer'
  );
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
