import { randomUUID } from 'node:crypto';
import { BroadcastChannel } from 'node:worker_threads';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { AttemptAbortController } from '../attempt/attempt-abort-controller.js';
import type { AttemptJob } from '../attempt/attempt-job.js';
import { toError } from '../common/errors.js';
import { WorkerPoolBootError } from '../errors/jobs.errors.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import type { StepStore } from '../steps/step-store.js';
import { PoolifierPool } from './poolifier-adapter.js';
import { serveThreadStepCalls } from './thread-step-store.js';
import { ThreadRegistry } from './thread-registry.js';
import { WorkerDispatcher } from './worker-dispatcher.js';
import { resolveWorkerEntry } from './worker-entry.js';
import type {
  WorkerJobOutcome,
  WorkerProgressMessage,
  WorkerTaskDescriptions,
  WorkerThreadData,
} from './worker-protocol.js';

/**
 * The thread pool that runs `@JobTask({ worker: true })` tasks: `PoolifierPool` (the only code that
 * knows poolifier) holds the threads, `ThreadRegistry` reports the death of a thread (poolifier
 * never settles its calls), `WorkerDispatcher` hands the threads batches of jobs, which each runs
 * one at a time, in claim order, under the clocks of `ThreadDeadlines` (timeout and grace).
 *
 * Started at module init when `workerModule` is set (one thread boots and reports the worker
 * tasks, within `workerStartTimeout`), grown to `workers` on demand (idle extra threads retire
 * after poolifier's minute), stopped after the runner drained.
 */
@Injectable()
export class WorkerPool {
  private readonly logger = new Logger('JobsWorkerPool');
  private pool?: PoolifierPool;
  private readonly threads: ThreadRegistry;
  private readonly dispatcher: WorkerDispatcher;
  /** Where each running attempt's `ctx.reportProgress` values go, by `id:attempt`. */
  private readonly progressListeners = new Map<string, (json: string) => void>();
  private progressChannel?: BroadcastChannel;
  /** Stops answering the threads' durable steps (`serveThreadStepCalls`). */
  private closeStepCalls?: () => void;
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
    return this.pool !== undefined && this.stopping === undefined && this.pool.ready;
  }

  /**
   * Starts the pool's first thread and returns the worker tasks its module provides. `steps` keeps
   * the durable steps of the threads' tasks (they have no database of their own).
   */
  async start(steps: StepStore): Promise<WorkerTaskDescriptions> {
    const { workerModule, workers, workerResourceLimits, workerExecArgv } = this.options;
    if (!workerModule) return [];
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
      stepsChannel: `nestjs-pg-jobs:steps:${randomUUID()}`,
    };
    this.closeStepCalls = serveThreadStepCalls(workerData.stepsChannel, steps);
    const { threads, dispatcher } = this;
    this.pool = await PoolifierPool.start(
      {
        file: entry.file,
        workers,
        workerData,
        execArgv: entry.execArgv,
        resourceLimits: workerResourceLimits,
      },
      {
        online: (worker) => threads.online(worker),
        crashed: (worker, err) => threads.crashed(worker, err),
        exited: (worker, code) => threads.exited(worker, code),
        answered: (answer) => dispatcher.answered(answer),
        poolError: (err) => this.logger.debug(`Pool error: ${toError(err).message}`),
      },
    );
    this.dispatcher.attach(this.pool);
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
   * destroys the pool (`PoolifierPool.destroy`: a thread that never yields, or never booted, delays
   * it by a second only). Idempotent.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.dispatcher.close();
      this.progressChannel?.close();
      this.closeStepCalls?.();
      await this.pool
        ?.destroy()
        .catch((err: unknown) =>
          this.logger.warn(`Destroying the worker pool: ${toError(err).message}`),
        );
    })();
    return this.stopping;
  }
}
