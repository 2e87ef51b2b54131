import type { Worker } from 'node:worker_threads';
import type { Logger } from '@nestjs/common';
import { WorkerDiedError } from '../errors/jobs.errors.js';
import { CONTROL_THREAD } from './worker-protocol.js';

/** One call into the pool that has not answered yet. */
export interface Dispatch {
  readonly control?: Int32Array;
  /** The thread the pool was about to hand it to, until the thread itself says it started. */
  expectedThread?: number;
  /** Settles the call when nothing else will: its thread died, hung, or the pool stopped. */
  readonly fail: (err: Error) => void;
}

/** What the registry tells the dispatcher: each change that may free a thread for a waiting call. */
export interface ThreadChanges {
  /** A thread came online; it takes tasks once poolifier has its ready message. */
  online(worker: Worker): void;
  /** A thread exited. */
  exited(): void;
}

/**
 * The pool's threads, and the calls running on them. A call whose thread dies (`process.exit`, an
 * asynchronous throw, out of memory) never settles in poolifier 5.3.2, and its `destroy()` leaves
 * it pending; so every call is registered here, the thread running it is known (the thread writes
 * its id into the call's shared control array as it starts), and the thread's `exit` fails the
 * calls it held, with what its `error` event said.
 *
 * Its `online`, `crashed` and `exited` are poolifier's per-thread event handlers.
 */
export class ThreadRegistry {
  private readonly threadIds = new WeakMap<Worker, number>();
  private readonly threads = new Map<number, Worker>();
  private readonly crashes = new Map<number, Error>();
  private readonly calls = new Set<Dispatch>();
  private boot?: Dispatch;

  constructor(
    private readonly logger: Logger,
    private readonly changes: ThreadChanges,
  ) {}

  track(call: Dispatch): void {
    this.calls.add(call);
  }

  untrack(call: Dispatch): void {
    this.calls.delete(call);
  }

  /**
   * While set, any thread's death fails `call`, whichever thread it ran on: until the first thread
   * has described its module, a death is the boot's failure (a worker entry that cannot load would
   * otherwise be restarted by poolifier forever).
   */
  failOnAnyDeath(call: Dispatch | undefined): void {
    this.boot = call;
  }

  /** Fails every call still running: poolifier's `destroy()` would leave them pending. */
  failAll(reason: () => Error): void {
    for (const call of [...this.calls]) call.fail(reason());
  }

  async terminate(threadId: number): Promise<void> {
    await this.threads
      .get(threadId)
      ?.terminate()
      .catch(() => undefined);
  }

  online(worker: Worker): void {
    this.threadIds.set(worker, worker.threadId);
    this.threads.set(worker.threadId, worker);
    this.changes.online(worker);
  }

  crashed(worker: Worker, err: Error): void {
    const id = this.threadIds.get(worker) ?? worker.threadId;
    this.crashes.set(id, err);
    this.logger.warn(`Worker thread ${id} crashed: ${err.message}`);
  }

  exited(worker: Worker, code: number): void {
    // poolifier's own exit handler runs after this one: it drops the thread and starts any
    // replacement, after which the pool may grow, or wait for the replacement's ready message.
    queueMicrotask(() => this.changes.exited());
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
  }
}

/** The thread running `dispatch`: the one that said it started it, else the one it was sent to. */
export function threadOf(dispatch: Dispatch): number | undefined {
  const started = dispatch.control ? Atomics.load(dispatch.control, CONTROL_THREAD) : 0;
  return started || dispatch.expectedThread;
}
