import { runWithTimeout } from '../attempt/run-with-timeout.js';
import { toError } from '../common/errors.js';
import type { TaskRegistry } from '../discovery/task-registry.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import type { WorkerPool } from '../worker-pool/worker-pool.service.js';
import type { RunningAttempt } from './running-attempts.js';

/** What running one attempt's task came to. */
export interface TaskOutcome {
  readonly failure?: Error;
  /**
   * An in-process task that was aborted (timeout, shutdown) and has not settled: it cannot be
   * stopped, so it keeps its slot until it does.
   */
  readonly stray?: Promise<void>;
}

/**
 * Runs an attempt's task under its timeout, in-process or in the worker pool, and says how it went:
 * it never throws, since a task's failure is recorded on the job and must not escape into the loop.
 */
export class TaskExecutor {
  constructor(
    private readonly options: ResolvedJobsOptions,
    private readonly registry: TaskRegistry,
    private readonly workerPool: WorkerPool,
  ) {}

  async run({ job, controller }: RunningAttempt): Promise<TaskOutcome> {
    const task = this.registry.get(job.task);
    if (!task) {
      return {
        failure: new Error(
          `No handler for task "${job.task}" on instance ${this.options.instanceId}.`,
        ),
      };
    }
    const timeout = task.options.timeout ?? this.options.taskTimeout;
    const { handler } = task;
    try {
      // A worker task's handler lives in the pool threads, which stop a thread that does not answer.
      if (!handler) await this.workerPool.run(job, timeout, controller);
      else {
        let settled = false;
        // Through a promise, so that a task that throws synchronously rejects like one that rejects.
        const running = Promise.resolve()
          .then(() =>
            handler.run(job.payload, {
              id: job.id,
              task: job.task,
              attempt: job.attempt,
              maxRetries: job.maxRetries,
              get signal() {
                return controller.signal;
              },
            }),
          )
          .finally(() => (settled = true));
        try {
          await runWithTimeout(running, timeout, controller);
        } catch (err) {
          const stray = settled ? undefined : running.then(noop, noop);
          return { failure: toError(err), stray };
        }
      }
      return {};
    } catch (err) {
      return { failure: toError(err) };
    }
  }
}

function noop(): void {}
