import type { Worker } from 'node:worker_threads';
import type { Logger } from '@nestjs/common';
import { WorkerDiedError } from '../errors/jobs.errors.js';

/** What the registry tells the dispatcher: each change that may free a thread for a waiting call. */
export interface ThreadChanges {
  /** A thread came online; it takes tasks once poolifier has its ready message. */
  online(worker: Worker): void;
  /**
   * Thread `threadId` exited, with `death` saying how: poolifier never settles its calls, so this
   * settles them. Called after poolifier's own exit handler, which drops the thread and starts any
   * replacement.
   */
  exited(threadId: number, death: WorkerDiedError): void;
}

/**
 * The pool's threads, and how they die. A call whose thread dies (`process.exit`, an asynchronous
 * throw, out of memory) never settles in poolifier 5.3.2, and its `destroy()` leaves it pending; so
 * each thread's `exit` is reported, with what its `error` event said, to the dispatcher, which knows
 * the calls each thread holds.
 *
 * Its `online`, `crashed` and `exited` are poolifier's per-thread event handlers.
 */
export class ThreadRegistry {
  private readonly threadIds = new WeakMap<Worker, number>();
  private readonly threads = new Map<number, Worker>();
  private readonly crashes = new Map<number, Error>();
  private boot?: (death: WorkerDiedError) => void;

  constructor(
    private readonly logger: Logger,
    private readonly changes: ThreadChanges,
  ) {}

  /**
   * While set, any thread's death fails the boot, whichever thread it was: until the first thread
   * has described its module, a death is the boot's failure (a worker entry that cannot load would
   * otherwise be restarted by poolifier forever).
   */
  failOnAnyDeath(boot: ((death: WorkerDiedError) => void) | undefined): void {
    this.boot = boot;
  }

  async terminate(threadId: number): Promise<void> {
    await this.threads
      .get(threadId)
      ?.terminate()
      .catch(() => undefined);
  }

  /**
   * Remembers `worker`'s id while it still has one: from its `online` event, or sooner, when a call
   * is sent to it while it boots (it may die before it comes online).
   */
  know(worker: Worker): void {
    if (this.threadIds.has(worker) || worker.threadId < 0) return;
    this.threadIds.set(worker, worker.threadId);
    this.threads.set(worker.threadId, worker);
  }

  online(worker: Worker): void {
    this.know(worker);
    this.changes.online(worker);
  }

  crashed(worker: Worker, err: Error): void {
    const id = this.threadIds.get(worker) ?? worker.threadId;
    this.crashes.set(id, err);
    this.logger.warn(`Worker thread ${id} crashed: ${err.message}`);
  }

  exited(worker: Worker, code: number): void {
    // `worker.threadId` is -1 once the thread is gone: use the id seen when it came online.
    const id = this.threadIds.get(worker);
    const crash = id === undefined ? undefined : this.crashes.get(id);
    if (id !== undefined) {
      this.threads.delete(id);
      this.crashes.delete(id);
    }
    const death = new WorkerDiedError(id ?? worker.threadId, code, crash);
    this.boot?.(death);
    // poolifier's own exit handler runs after this one: it drops the thread and starts any
    // replacement, after which the pool may grow, or wait for the replacement's ready message.
    if (id !== undefined) queueMicrotask(() => this.changes.exited(id, death));
  }
}
