/**
 * The entry of every pool thread: boots the user's `workerModule` once with
 * `NestFactory.createApplicationContext`, finds its `@JobTask({ worker: true })` handlers with the
 * same registry the main thread uses, and runs jobs by task name with their injected dependencies.
 */
import 'reflect-metadata';
import { BroadcastChannel, threadId, workerData } from 'node:worker_threads';
import type { INestApplicationContext, Type } from '@nestjs/common';
import { Logger, Module } from '@nestjs/common';
import { DiscoveryModule, NestFactory } from '@nestjs/core';
import { ThreadWorker } from 'poolifier';
import { endingOfReturn, endingOfThrow } from '../attempt/attempt-ending.js';
import type { AttemptEnding } from '../attempt/attempt-ending.js';
import { createJobContext } from '../attempt/job-context.js';
import { TaskRegistry } from '../discovery/task-registry.js';
import { JobCancelledError, JobsShutdownError, JobTimeoutError } from '../errors/jobs.errors.js';
import {
  CONTROL_SIGNAL,
  CONTROL_STARTED,
  CONTROL_THREAD,
  DESCRIBE_TASKS,
  RUN_TASK,
  SIGNAL_CANCELLED,
  SIGNAL_ENDED,
  SIGNAL_NONE,
  SIGNAL_SHUTDOWN,
  SIGNAL_TIMEOUT,
  STARTED_YES,
  whenChanged,
} from './worker-protocol.js';
import type {
  WorkerJobOutcome,
  WorkerJobRequest,
  WorkerProgressMessage,
  WorkerTaskDescriptions,
  WorkerThreadData,
} from './worker-protocol.js';

interface WorkerHost {
  readonly app: INestApplicationContext;
  readonly registry: TaskRegistry;
}

const logger = new Logger('JobsWorkerThread');
const threadData = workerData as WorkerThreadData;
const progressChannel = new BroadcastChannel(threadData.progressChannel);
// Only sends: it must not keep a retiring thread alive.
progressChannel.unref();

const booting: Promise<WorkerHost> = boot(threadData);
// A module that fails to boot is reported by the first task (the main thread's describe, at boot);
// until then its rejection must not count as unhandled and kill the thread.
booting.catch(() => undefined);

async function boot({ moduleUrl, exportName }: WorkerThreadData): Promise<WorkerHost> {
  const userModule = pickModule(await import(moduleUrl), moduleUrl, exportName);
  @Module({ imports: [DiscoveryModule, userModule], providers: [TaskRegistry] })
  class JobsWorkerHostModule {}
  const app = await NestFactory.createApplicationContext(JobsWorkerHostModule, {
    logger: ['error', 'warn'],
    abortOnError: false,
  });
  const registry = app.get(TaskRegistry);
  registry.discover('worker');
  return { app, registry };
}

/** What `@Module()` defines on its class: only the keys it was given. */
const MODULE_KEYS = ['imports', 'providers', 'controllers', 'exports'];

function pickModule(exports: Record<string, unknown>, url: string, exportName?: string): Type {
  if (exportName) {
    const named = exports[exportName];
    if (typeof named !== 'function')
      throw new Error(`workerModule ${url} has no export "${exportName}".`);
    return named as Type;
  }
  const modules = Object.values(exports).filter(
    (value): value is Type =>
      typeof value === 'function' && MODULE_KEYS.some((key) => Reflect.hasMetadata(key, value)),
  );
  const unique = [...new Set(modules)];
  if (unique.length !== 1) {
    throw new Error(
      `workerModule ${url} must export exactly one Nest module (found ${unique.length}); ` +
        'name the one to boot as "path#ExportName".',
    );
  }
  return unique[0];
}

async function describe(): Promise<WorkerTaskDescriptions> {
  const { registry } = await booting;
  // A `backoff` function cannot cross threads; it stays here, where its task's failures happen.
  return registry.names.map((name) => {
    const options = { ...registry.get(name)!.options };
    delete options.backoff;
    return options;
  });
}

async function run(request: WorkerJobRequest | undefined): Promise<WorkerJobOutcome> {
  if (!request) throw new Error('A worker task call needs its job.');
  const control = new Int32Array(request.control);
  // First, synchronously: from here on the main thread attributes this thread's death to this job.
  Atomics.store(control, CONTROL_THREAD, threadId);
  const { registry } = await booting;
  const task = registry.get(request.task);
  if (!task?.handler)
    throw new Error(`No worker task "${request.task}" in workerModule (thread ${threadId}).`);
  const controller = new AbortController();
  void whenChanged(control, CONTROL_SIGNAL, SIGNAL_NONE).then(() => {
    const code = Atomics.load(control, CONTROL_SIGNAL);
    if (code === SIGNAL_TIMEOUT) controller.abort(new JobTimeoutError(request.timeout));
    else if (code === SIGNAL_SHUTDOWN) controller.abort(new JobsShutdownError());
    else if (code === SIGNAL_CANCELLED) controller.abort(new JobCancelledError(request.id));
  });
  Atomics.store(control, CONTROL_STARTED, STARTED_YES);
  Atomics.notify(control, CONTROL_STARTED);
  let progress: string | undefined;
  const ctx = createJobContext(request, {
    signal: () => controller.signal,
    progress: (json) => {
      progress = json;
      const message: WorkerProgressMessage = {
        id: request.id,
        attempt: request.attempt,
        progress: json,
      };
      progressChannel.postMessage(message);
    },
  });
  try {
    let ending: AttemptEnding;
    try {
      ending = endingOfReturn(await task.handler.run(request.payload, ctx), request.maxResultBytes);
    } catch (err) {
      ending = endingOfThrow(err, request, task.options.backoff, (message) => logger.warn(message));
    }
    if (ending.outcome !== 'failed') return { ending, progress };
    const { name, message, stack } = ending.error;
    return { ending: { ...ending, error: { name, message, stack } }, progress };
  } finally {
    // Releases the pending `waitAsync` when no abort came.
    if (
      Atomics.compareExchange(control, CONTROL_SIGNAL, SIGNAL_NONE, SIGNAL_ENDED) === SIGNAL_NONE
    ) {
      Atomics.notify(control, CONTROL_SIGNAL);
    }
  }
}

// Each task function answers its own type: the pool's callers know which they called.
new ThreadWorker<WorkerJobRequest | undefined, unknown>(
  { [RUN_TASK]: run, [DESCRIBE_TASKS]: describe },
  {
    // Threads are retired by the pool (dynamic ones after a minute idle) or at shutdown. Closing the
    // context gives providers' shutdown hooks a chance, without making the pool wait on them:
    // poolifier's destroy() never settles when this handler awaits the close.
    killHandler: () => {
      void booting.then((host) => host.app.close()).catch(() => undefined);
    },
  },
);
