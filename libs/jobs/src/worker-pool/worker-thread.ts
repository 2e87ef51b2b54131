/**
 * The entry of every pool thread: boots the user's `workerModule` once with
 * `NestFactory.createApplicationContext`, finds its `@JobTask({ worker: true })` handlers with the
 * same registry the main thread uses, and runs the batches of jobs it is handed
 * (`ThreadBatchRunner`) by task name, with their injected dependencies.
 */
import 'reflect-metadata';
import { BroadcastChannel, threadId, workerData } from 'node:worker_threads';
import type { INestApplicationContext, Type } from '@nestjs/common';
import { Logger, Module } from '@nestjs/common';
import { DiscoveryModule, NestFactory } from '@nestjs/core';
import { endingOfReturn, endingOfThrow } from '../attempt/attempt-ending.js';
import type { AttemptEnding } from '../attempt/attempt-ending.js';
import { createJobContext } from '../attempt/job-context.js';
import type { ContextSources } from '../attempt/job-context.js';
import { toError } from '../common/errors.js';
import type { JobBackoff, JobTaskHandler } from '../discovery/job-task.interfaces.js';
import { TaskRegistry } from '../discovery/task-registry.js';
import { JobCancelledError, JobsShutdownError, JobTimeoutError } from '../errors/jobs.errors.js';
import type { JobSuspension } from '../errors/jobs.errors.js';
import { serveThreadTasks } from './poolifier-adapter.js';
import { ThreadStepStore } from './thread-step-store.js';
import { StepMemo } from '../steps/step-memo.js';
import { ThreadBatchRunner } from './thread-batch-runner.js';
import { SIGNAL_CANCELLED, SIGNAL_NONE, SIGNAL_SHUTDOWN, SIGNAL_TIMEOUT } from './job-control.js';
import type { JobControl } from './job-control.js';
import { payloadJsonSchema } from '../task-schemas/payload-json-schema.js';
import { runWithSchemas } from '../task-schemas/task-schemas.js';
import type { TaskSchemas } from '../task-schemas/task-schemas.js';
import type { JobDependencies } from '../discovery/job-task.interfaces.js';
import { DESCRIBE_TASKS, RUN_BATCH } from './worker-protocol.js';
import type {
  ThreadErrorFields,
  WorkerJobAnswer,
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
const stepStore = new ThreadStepStore(threadData.stepsChannel);
// Only sends: it must not keep a retiring thread alive.
progressChannel.unref();

const booting: Promise<WorkerHost> = boot(threadData);
// A module that fails to boot is reported by the first task (the main thread's describe, at boot);
// until then its rejection must not count as unhandled and kill the thread.
booting.catch(() => undefined);

async function boot({
  moduleUrl,
  exportName,
  transpileTypeScript,
}: WorkerThreadData): Promise<WorkerHost> {
  if (transpileTypeScript) {
    // Only threads of a TypeScript workerModule load the hooks, and through them `typescript`.
    const { registerTypeScriptHooks } =
      await import('../typescript-workers/register-typescript-hooks.js');
    registerTypeScriptHooks();
  }
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

function pickModule(namespace: Record<string, unknown>, url: string, exportName?: string): Type {
  // A CommonJS module's `module.exports` is its namespace's `default`; its named exports are there
  // only as far as Node's lexer finds them in the file (none in a TypeScript file it did not compile).
  const exports = isObject(namespace.default) ? { ...namespace.default, ...namespace } : namespace;
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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

async function describe(): Promise<WorkerTaskDescriptions> {
  const { registry } = await booting;
  // A `backoff` function and the schemas cannot cross threads; they stay here, where the task's
  // failures happen and its payloads are parsed. The main thread gets the payload's JSON Schema.
  return registry.names.map((name) => {
    const { payloadSchema, ...options } = registry.get(name)!.options;
    delete options.backoff;
    delete options.resultSchema;
    const jsonSchema = payloadJsonSchema(payloadSchema);
    return jsonSchema ? { ...options, payloadJsonSchema: jsonSchema } : options;
  });
}

/** The fields of a thrown value that cross back to the main thread. */
function errorFields(err: unknown): ThreadErrorFields {
  const { name, message, stack } = toError(err);
  return { name, message, stack };
}

/** Runs one job of a batch, its start claimed: never rejects, as its batch goes on after it. */
async function runJob(request: WorkerJobRequest, control: JobControl): Promise<WorkerJobAnswer> {
  const { key } = request;
  try {
    const { registry } = await booting;
    const task = registry.get(request.task);
    if (!task?.handler)
      throw new Error(`No worker task "${request.task}" in workerModule (thread ${threadId}).`);
    return { key, outcome: await runTask(request, control, task.handler, task.options) };
  } catch (err) {
    return { key, error: errorFields(err) };
  }
}

/**
 * What a job's `JobContext` reads in a thread. A class, not an object literal, as it lives as long
 * as the attempt: see "Memory" in docs/performance.md.
 */
class ThreadJobSources implements ContextSources {
  /** The last value reported, which goes back with the outcome. */
  lastProgress?: string;
  private abortSignal?: AbortSignal;
  private memo?: StepMemo;

  constructor(
    private readonly request: WorkerJobRequest,
    private readonly control: JobControl,
  ) {}

  /**
   * Made when the task first asks for it: only then does the thread watch the job's control slot
   * for the abort the main thread asks for.
   */
  signal(): AbortSignal {
    if (this.abortSignal) return this.abortSignal;
    const controller = new AbortController();
    this.abortSignal = controller.signal;
    const { request, control } = this;
    const abort = () => {
      const code = control.abortCode();
      if (code === SIGNAL_TIMEOUT) controller.abort(new JobTimeoutError(request.timeout));
      else if (code === SIGNAL_SHUTDOWN) controller.abort(new JobsShutdownError());
      else if (code === SIGNAL_CANCELLED) controller.abort(new JobCancelledError(request.id));
    };
    if (control.abortCode() === SIGNAL_NONE) void control.whenSignalled().then(abort);
    else abort();
    return controller.signal;
  }

  dependencies(): Promise<JobDependencies> {
    return Promise.resolve(this.request.dependencies ?? {});
  }

  /** The attempt's durable steps, kept by the main thread's store (`ThreadStepStore`). */
  steps(): StepMemo {
    const { id, attempt, claim } = this.request;
    return (this.memo ??= new StepMemo(
      stepStore,
      { id, attempt, claim },
      threadData.maxResultBytes,
    ));
  }

  /** The suspension a step of the attempt asked for, if any. */
  suspension(): JobSuspension | undefined {
    return this.memo?.suspension;
  }

  progress(json: string): void {
    this.lastProgress = json;
    const message: WorkerProgressMessage = {
      id: this.request.id,
      attempt: this.request.attempt,
      progress: json,
    };
    progressChannel.postMessage(message);
  }
}

async function runTask(
  request: WorkerJobRequest,
  control: JobControl,
  handler: JobTaskHandler,
  options: TaskSchemas & { readonly backoff?: JobBackoff },
): Promise<WorkerJobOutcome> {
  const sources = new ThreadJobSources(request, control);
  const ctx = createJobContext(request, sources);
  const { backoff } = options;
  let ending: AttemptEnding;
  try {
    // The schemas live in this thread, with the handler: a payload is parsed (and a result checked)
    // here. A task without one pays nothing for them.
    const value =
      options.payloadSchema || options.resultSchema
        ? await runWithSchemas(request.task, options, request.payload, (payload) =>
            handler.run(payload, ctx),
          )
        : await handler.run(request.payload, ctx);
    ending = endingOfReturn(value, threadData.maxResultBytes);
  } catch (err) {
    ending = endingOfThrow(err, request, backoff, (message) => logger.warn(message));
  }
  const progress = sources.lastProgress;
  // As in-process: a task that caught its step's suspension is suspended all the same.
  const suspension =
    sources.suspension() ?? (ending.outcome === 'suspended' ? ending.suspension : undefined);
  if (suspension) {
    const { step, position, seconds, event, jobs } = suspension;
    return {
      ending: { outcome: 'suspended', suspension: { step, position, seconds, event, jobs } },
      progress,
    };
  }
  if (ending.outcome !== 'failed') return { ending, progress };
  return { ending: { ...ending, error: errorFields(ending.error) }, progress };
}

const batches = new ThreadBatchRunner(runJob, (answer) => sendAnswer(answer));

// poolifier counts a thread ready, and hands it batches, once it serves its tasks: only once the
// module has booted, so that a thread still booting is not taken for one that can start a job (a
// batch handed to a thread the pool adds waits for it, and an idle thread may take it back). A boot
// that failed is reported by the first task, the main thread's describe.
await booting.catch(() => undefined);

// Each task function answers its own type: the pool's callers know which they called.
const sendAnswer: (answer: WorkerJobAnswer) => void = await serveThreadTasks(
  {
    [RUN_BATCH]: async (batch) => {
      if (!batch) throw new Error('A worker batch call needs its jobs.');
      await batches.run(batch);
    },
    [DESCRIBE_TASKS]: describe,
  },
  // Threads are retired by the pool (dynamic ones after a minute idle) or at shutdown. Closing the
  // context gives providers' shutdown hooks a chance, without making the pool wait on them.
  () => {
    void booting.then((host) => host.app.close()).catch(() => undefined);
  },
);
