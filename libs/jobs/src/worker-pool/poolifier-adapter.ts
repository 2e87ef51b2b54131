/**
 * The one file that knows poolifier (5.3.2, pinned): both sides of it, the pool on the main thread
 * (`PoolifierPool`) and the worker a pool thread serves its tasks with (`serveThreadTasks`). What
 * the rest of `worker-pool/` sees is Node's `Worker`, a thread's load, and the protocol of
 * `worker-protocol.ts`; poolifier itself is loaded only by an app that has worker tasks.
 *
 * What poolifier leaves to its user, and the library does elsewhere: it never settles a call whose
 * thread died (`process.exit`, an asynchronous throw, out of memory), and its `destroy()` leaves
 * such calls pending (`ThreadRegistry` reports deaths, `WorkerDispatcher` settles the calls); a
 * task function gets only its data, no signal (`JobControl`).
 */
import type { MessagePort, ResourceLimits, Worker } from 'node:worker_threads';
import type { FixedThreadPool } from 'poolifier';
import type { ThreadLoad } from './batch-plan.js';
import { DESCRIBE_TASKS, RUN_BATCH } from './worker-protocol.js';
import type {
  WorkerAnswerMessage,
  WorkerBatchRequest,
  WorkerJobAnswer,
  WorkerThreadData,
} from './worker-protocol.js';

/** The poolifier pool, dynamic or fixed (a fixed pool is the dynamic one's base class). */
type ThreadPool = FixedThreadPool<WorkerBatchRequest | undefined, unknown>;
type PoolNode = ThreadPool['workerNodes'][number];

/** How the pool's threads are started. */
export interface PoolSpec {
  /** The thread entry's file. */
  readonly file: string;
  /** Threads at most; the pool starts with one and grows on demand. */
  readonly workers: number;
  readonly workerData: WorkerThreadData;
  readonly execArgv: readonly string[] | undefined;
  readonly resourceLimits: ResourceLimits | undefined;
}

/** What the pool tells of its threads. */
export interface PoolEvents {
  /** A thread came online; it takes tasks once its ready message has come (`whenReady`). */
  online(worker: Worker): void;
  /** A thread's uncaught error; its `exit` follows. */
  crashed(worker: Worker, err: Error): void;
  /** A thread exited. Called before poolifier's own exit handler drops it and starts a replacement. */
  exited(worker: Worker, code: number): void;
  /** A job's answer, which a thread sends as soon as the job ended (`serveThreadTasks`). */
  answered(answer: WorkerJobAnswer): void;
  /** An error poolifier reports on its emitter. */
  poolError(err: unknown): void;
}

/** A batch poolifier handed to a thread. */
export interface SentBatch {
  readonly worker: Worker;
  readonly threadId: number;
  /**
   * Settles once the thread has ended or given back every job of the batch; rejects (with what the
   * thread threw, as cloned) only if poolifier refused it, and never settles if the thread died.
   */
  readonly done: Promise<unknown>;
}

/** The main thread's side of poolifier: the pool, its threads' load, and their message ports. */
export class PoolifierPool {
  private readonly listening = new WeakSet<MessagePort>();

  private constructor(
    private readonly pool: ThreadPool,
    private readonly events: PoolEvents,
  ) {}

  /** Creates the pool; its first thread starts booting. */
  static async start(spec: PoolSpec, events: PoolEvents): Promise<PoolifierPool> {
    // Loaded only by an app that has worker tasks.
    const { DynamicThreadPool, FixedThreadPool } = await import('poolifier');
    const poolOptions = {
      workerOptions: {
        workerData: spec.workerData,
        execArgv: spec.execArgv as string[] | undefined,
        resourceLimits: spec.resourceLimits,
      },
      // poolifier calls these with the thread as `this`.
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
    const pool: ThreadPool =
      spec.workers === 1
        ? new FixedThreadPool(1, spec.file, poolOptions)
        : new DynamicThreadPool(1, spec.workers, spec.file, poolOptions);
    // Without a listener, a thread's uncaught error is re-thrown here and kills the host process.
    pool.emitter?.on('error', (err: unknown) => events.poolError(err));
    return new PoolifierPool(pool, events);
  }

  /** Whether the pool's first threads have booted (poolifier's `ready`). */
  get ready(): boolean {
    return this.pool.info.ready;
  }

  /** Each thread's load, in poolifier's order of its threads. */
  threadLoads(): ThreadLoad[] {
    return this.pool.workerNodes.map((node) => ({ ready: node.info.ready, busy: load(node) > 0 }));
  }

  /**
   * Asks a thread for the worker tasks its module provides, once it has booted. Rejects with what
   * the thread threw, as cloned; never settles if the thread dies, or never boots.
   */
  describeTasks(): Promise<unknown> {
    return this.pool.execute(undefined, DESCRIBE_TASKS);
  }

  /**
   * Hands `batch` to the thread poolifier chooses, in one message; `undefined` if it found none to
   * take it (then nothing was posted). poolifier chooses the thread and counts the task on it
   * synchronously, inside `execute`: the thread whose count went up (or the one it added) holds it.
   */
  sendBatch(batch: WorkerBatchRequest): SentBatch | undefined {
    const before = new Map(this.pool.workerNodes.map((node) => [node, load(node)]));
    const done = this.pool.execute(batch, RUN_BATCH);
    const node = this.pool.workerNodes.find(
      (candidate) => load(candidate) > (before.get(candidate) ?? 0),
    );
    if (!node) {
      done.catch(() => undefined);
      return undefined;
    }
    if (node.messageChannel) this.listen(node.messageChannel.port1);
    return { worker: node.worker as Worker, threadId: node.info.id!, done };
  }

  /**
   * Calls `ready` once a (re)started thread takes tasks, and hears its answers. poolifier marks a
   * thread ready when its ready message arrives on the thread's message channel and emits nothing
   * then (its pool `ready` event fires once, for the first threads), so this listens on that channel
   * after poolifier's own listener, which has marked the thread ready when this one runs. The
   * message may also come before `online`: then the thread is ready already.
   */
  whenReady(worker: Worker, ready: () => void): void {
    const node = this.pool.workerNodes.find((candidate) => candidate.worker === worker);
    const port = node?.messageChannel?.port1;
    if (port) this.listen(port);
    if (!node || node.info.ready || !port) {
      ready();
      return;
    }
    const onMessage = () => {
      if (!node.info.ready) return;
      port.off('message', onMessage);
      ready();
    };
    port.on('message', onMessage);
  }

  /**
   * Destroys the pool: it gives each thread a second to acknowledge, then terminates it, so a thread
   * that never yields (or never booted) delays this by that second only. Leaves calls pending.
   */
  destroy(): Promise<void> {
    return this.pool.destroy();
  }

  /** Hears the answers a thread sends on its poolifier port (`WorkerAnswerMessage`). */
  private listen(port: MessagePort): void {
    if (this.listening.has(port)) return;
    this.listening.add(port);
    port.on('message', (message: { taskId?: unknown; data?: unknown }) => {
      // A task's own reply: poolifier's.
      if (message.taskId !== undefined) return;
      const answer = (message.data as Partial<WorkerAnswerMessage> | undefined)?.answer;
      if (answer) this.events.answered(answer);
    });
  }
}

/** What poolifier counts on a thread: tasks running and queued there. */
function load(node: PoolNode): number {
  return node.usage.tasks.executing + node.usage.tasks.queued;
}

/** The task functions every pool thread serves (`RUN_BATCH`, `DESCRIBE_TASKS`). */
export interface ThreadTasks {
  readonly [RUN_BATCH]: (batch: WorkerBatchRequest | undefined) => Promise<void>;
  readonly [DESCRIBE_TASKS]: () => Promise<unknown>;
}

/**
 * A pool thread's side of poolifier: serves `tasks` from now on (poolifier counts the thread ready
 * once this has run) and returns how the thread sends a job's answer, on the port it answers tasks
 * on. `onKill` runs when the pool retires the thread; poolifier's `destroy()` never settles when it
 * awaits, so it must not.
 */
export async function serveThreadTasks(
  tasks: ThreadTasks,
  onKill: () => void,
): Promise<(answer: WorkerJobAnswer) => void> {
  const { ThreadWorker } = await import('poolifier');
  class JobsThreadWorker extends ThreadWorker<WorkerBatchRequest | undefined, unknown> {
    sendAnswer(answer: WorkerJobAnswer): void {
      const message: WorkerAnswerMessage = { answer };
      this.sendToMainWorker({ data: message });
    }
  }
  // Both functions are `async`: poolifier sends a synchronous function's return value as it is,
  // promise or not.
  const worker = new JobsThreadWorker({ ...tasks }, { killHandler: onKill });
  return (answer) => worker.sendAnswer(answer);
}
