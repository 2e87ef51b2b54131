import { Injectable } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import { InvalidTaskHandlerError } from '../errors/jobs.errors.js';
import { DEFAULT_QUEUE } from '../options/defaults.js';
import { JOB_TASK_METADATA } from './job-task.decorator.js';
import type { JobTaskHandler, JobTaskOptions } from './job-task.interfaces.js';
import { validateTaskOptions } from './validate-task-options.js';

/**
 * A discovered task: its options and the handler instance Nest built. A worker task registered in
 * the main thread has no handler here: its instance lives in every pool thread.
 */
export interface RegisteredTask {
  readonly options: JobTaskOptions;
  readonly handler?: JobTaskHandler;
  /**
   * A worker task's payload JSON Schema, as its pool thread reported it (its `payloadSchema` stays
   * in the thread).
   */
  readonly payloadJsonSchema?: Record<string, unknown>;
}

/**
 * Class metadata of a provider that makes tasks of its own (a `JobTaskSource`): the
 * `@nestjs/schedule` bridge, one task per `@Cron()` method.
 */
export const JOB_TASK_SOURCE_METADATA = 'nestjs-pg-jobs:task-source';

/**
 * A provider (marked with `JOB_TASK_SOURCE_METADATA`) asked for its tasks whenever the app's tasks
 * are discovered, so its tasks are known, with their schedules, whichever module initialises first.
 */
export interface JobTaskSource {
  jobTasks(): readonly (Required<Pick<RegisteredTask, 'options' | 'handler'>> & {
    readonly className: string;
  })[];
}

/**
 * Which `@JobTask()` classes a registry takes: the main thread's (`in-process`) leaves the
 * `worker: true` ones to the pool threads, which take only those (`worker`).
 */
export type TaskKind = 'in-process' | 'worker';

/**
 * The tasks this instance can run, found among the app's providers. Everything wrong with a
 * handler is reported here, at boot, naming the classes, rather than on the first job.
 */
@Injectable()
export class TaskRegistry {
  private readonly tasks = new Map<string, RegisteredTask & { className: string }>();
  private namesCache: readonly string[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
  ) {}

  discover(kind: TaskKind = 'in-process'): void {
    this.tasks.clear();
    for (const wrapper of this.discovery.getProviders()) {
      const type = wrapper.metatype;
      if (!type || typeof type !== 'function') continue;
      if (kind === 'in-process' && this.reflector.get(JOB_TASK_SOURCE_METADATA, type)) {
        for (const task of (wrapper.instance as JobTaskSource).jobTasks()) {
          this.register(task.options, task.handler, task.className, true);
        }
      }
      const options = this.reflector.get<JobTaskOptions | undefined>(JOB_TASK_METADATA, type);
      if (!options || (options.worker === true) !== (kind === 'worker')) continue;
      this.register(options, wrapper.instance, type.name, wrapper.isDependencyTreeStatic());
    }
    this.namesCache = [...this.tasks.keys()].sort();
  }

  /**
   * Adds the worker tasks a pool thread reported from `workerModule`: the main thread claims and
   * enqueues them by name, and the pool runs them.
   */
  addWorkerTasks(
    reported: readonly (JobTaskOptions & {
      readonly payloadJsonSchema?: Record<string, unknown>;
    })[],
    source: string,
  ): void {
    const className = `${source} (worker)`;
    for (const { payloadJsonSchema, ...reportedOptions } of reported) {
      const options = validateTaskOptions(reportedOptions, className);
      const name = options.name;
      const existing = this.tasks.get(name);
      if (existing) {
        throw new InvalidTaskHandlerError(
          `Task "${name}" has two handlers: ${existing.className} in the app and a worker task in ${source}. ` +
            'Give each a name of its own.',
        );
      }
      this.tasks.set(name, { options: { ...options, worker: true }, className, payloadJsonSchema });
    }
    this.namesCache = [...this.tasks.keys()].sort();
  }

  /** Every task, with the class (or worker module) that declared it, for checks at boot. */
  get all(): readonly (RegisteredTask & { readonly className: string })[] {
    return [...this.tasks.values()];
  }

  get(name: string): RegisteredTask | undefined {
    return this.tasks.get(name);
  }

  /** The queue of a task this instance knows; `undefined` for another task. */
  queueOf(name: string): string | undefined {
    const task = this.tasks.get(name);
    return task && (task.options.queue ?? DEFAULT_QUEUE);
  }

  /**
   * The queue a new job of task `name` is filed under, by `addJob` and the cron planner alike: its
   * task's queue here, else the default queue (the instance that claims it records its own).
   */
  queueForNewJob(name: string): string {
    return this.queueOf(name) ?? DEFAULT_QUEUE;
  }

  /**
   * The queue a pending job of task `name` will run in, as far as this instance can tell: its
   * task's queue here, else the one it was enqueued under (an instance that enqueues a task it has
   * no handler for files it under the default queue; the instance that runs it applies its own).
   */
  pendingQueueOf(name: string, enqueuedUnder: string): string {
    return this.queueOf(name) ?? enqueuedUnder;
  }

  /** Names of the tasks this instance runs, sorted: what the runner claims. */
  get names(): readonly string[] {
    return this.namesCache;
  }

  private register(
    options: JobTaskOptions,
    instance: unknown,
    className: string,
    isStatic: boolean,
  ): void {
    const { name } = validateTaskOptions(options, className);
    const existing = this.tasks.get(name);
    if (existing && existing.className !== className) {
      throw new InvalidTaskHandlerError(
        `Task "${name}" has two handlers: ${existing.className} and ${className}. Give each a name of its own.`,
      );
    }
    if (!isStatic) {
      throw new InvalidTaskHandlerError(
        `${className} (task "${name}") is request- or transient-scoped; task handlers must be singletons.`,
      );
    }
    if (typeof (instance as Partial<JobTaskHandler> | undefined)?.run !== 'function') {
      throw new InvalidTaskHandlerError(
        `${className} is decorated with @JobTask("${name}") but has no run(payload, ctx) method.`,
      );
    }
    this.tasks.set(name, { options, handler: instance as JobTaskHandler, className });
  }
}
