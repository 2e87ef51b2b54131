import { randomUUID } from 'node:crypto';
import { BroadcastChannel } from 'node:worker_threads';
import type { Worker } from 'node:worker_threads';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { AttemptAbortController } from '../attempt/attempt-abort-controller.js';
import type { AttemptJob } from '../attempt/attempt-job.js';
import { toError } from '../common/errors.js';
import { WorkerPoolBootError } from '../errors/jobs.errors.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { ThreadRegistry } from './thread-registry.js';
import { WorkerDispatcher } from './worker-dispatcher.js';
import type { ThreadPool } from './worker-dispatcher.js';
import { resolveWorkerEntry } from './worker-entry.js';
import type {
  WorkerJobOutcome,
  WorkerProgressMessage,
  WorkerTaskDescriptions,
  WorkerThreadData,
} from './worker-protocol.js';

/**
 * The poolifier thread pool that runs `@JobTask({ worker: true })` tasks, with what poolifier 5.3.2
 * leaves to its user: `ThreadRegistry` reports the death of a thread (poolifier never settles its
 * calls), `WorkerDispatcher` hands the threads batches of jobs, which each runs one at a time, in
 * claim order, under their timeout and grace.
 *
 * Started at module init when `workerModule` is set (one thread boots and reports the worker
 * tasks), grown to `workers` on demand (idle extra threads retire after poolifier's minute),
 * stopped after the runner drained.
 */
@Injectable()
export class WorkerPool {
  private readonly logger = new Logger('JobsWorkerPool');
  private pool?: ThreadPool;
  private readonly threads: ThreadRegistry;
  private readonly dispatcher: WorkerDispatcher;
  /** Where each running attempt's `ctx.reportProgress` values go, by `id:attempt`. */
  private readonly progressListeners = new Map<string, (json: string) => void>();
  private progressChannel?: BroadcastChannel;
  private stopping?: Promise<void>;

  constructor(@Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions) {
    this.threads = new ThreadRegistry(this.logger, {
      online: (worker) => this.dispatcher.whenReady(worker),
      exited: (threadId, death) => this.dispatcher.threadExited(threadId, death),
    });
    this.dispatcher = new WorkerDispatcher(options, this.threads, this.logger);
  }

  get enabled(): boolean {
    return this.options.workerModule !== undefined;
  }

  /** Whether the pool serves: started, not stopped, and its threads booted (poolifier's `ready`). */
  get ready(): boolean {
    return this.pool !== undefined && this.stopping === undefined && this.pool.info.ready;
  }

  /** Starts the pool's first thread and returns the worker tasks its module provides. */
  async start(): Promise<WorkerTaskDescriptions> {
    const { workerModule, workers, workerResourceLimits, workerExecArgv } = this.options;
    if (!workerModule) return [];
    // Loaded only by an app that has worker tasks.
    const { DynamicThreadPool, FixedThreadPool } = await import('poolifier');
    const entry = resolveWorkerEntry(workerModule.url, workerExecArgv);
    const progressChannel = new BroadcastChannel(`nestjs-pg-jobs:progress:${randomUUID()}`);
    progressChannel.onmessage = (event) => {
      const { id, attempt, progress } = (event as { data: WorkerProgressMessage }).data;
      this.progressListeners.get(`${id}:${attempt}`)?.(progress);
    };
    // The pool's threads keep the process alive while they run; the channel must not on its own.
    progressChannel.unref();
    this.progressChannel = progressChannel;
    const workerData: WorkerThreadData = {
      moduleUrl: workerModule.url,
      exportName: workerModule.exportName,
      transpileTypeScript: entry.transpilesTypeScript,
      progressChannel: progressChannel.name,
      maxResultBytes: this.options.maxResultBytes,
    };
    const { threads } = this;
    const poolOptions = {
      workerOptions: { workerData, execArgv: entry.execArgv, resourceLimits: workerResourceLimits },
      // poolifier calls these with the thread as `this`.
      onlineHandler(this: Worker) {
        threads.online(this);
      },
      errorHandler(this: Worker, err: Error) {
        threads.crashed(this, err);
      },
      exitHandler(this: Worker, code: number) {
        threads.exited(this, code);
      },
    };
    // `DynamicThreadPool(1, 1)` throws: a single thread is a fixed pool.
    this.pool =
      workers === 1
        ? new FixedThreadPool(1, entry.file, poolOptions)
        : new DynamicThreadPool(1, workers, entry.file, poolOptions);
    this.dispatcher.attach(this.pool);
    // Without a listener, a thread's uncaught error is re-thrown here and kills the host process.
    this.pool.emitter?.on('error', (err: unknown) =>
      this.logger.debug(`Pool error: ${toError(err).message}`),
    );
    try {
      return await this.dispatcher.describe();
    } catch (err) {
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
   * Runs one attempt in a thread (see `WorkerDispatcher.run`); `onProgress` hears the values its
   * task reports while it runs, as JSON (the last one also comes with the outcome).
   */
  async run(
    job: AttemptJob,
    timeout: number,
    controller: AttemptAbortController,
    onProgress?: (json: string) => void,
  ): Promise<WorkerJobOutcome> {
    if (!onProgress) return this.dispatcher.run(job, timeout, controller);
    const key = `${job.id}:${job.attempt}`;
    this.progressListeners.set(key, onProgress);
    try {
      return await this.dispatcher.run(job, timeout, controller);
    } finally {
      this.progressListeners.delete(key);
    }
  }

  /**
   * Fails every call still waiting or running (poolifier's `destroy()` leaves them pending), then
   * destroys the pool: it gives each thread a second to acknowledge, then terminates it, so a thread
   * that never yields delays shutdown by that second only. Idempotent.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.dispatcher.close();
      this.progressChannel?.close();
      await this.pool
        ?.destroy()
        .catch((err: unknown) =>
          this.logger.warn(`Destroying the worker pool: ${toError(err).message}`),
        );
    })();
    return this.stopping;
  }
}
