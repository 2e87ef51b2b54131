import { Inject, Injectable, Logger, SetMetadata } from '@nestjs/common';
import type { InjectionToken, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModuleRef, ModulesContainer } from '@nestjs/core';
import type { SchedulerRegistry } from '@nestjs/schedule';
import { findInApp } from '../common/find-in-app.js';
import { CronPlannerService } from '../cron-planner/cron-planner.service.js';
import { JOB_TASK_SOURCE_METADATA } from '../discovery/task-registry.js';
import type { JobTaskSource } from '../discovery/task-registry.js';
import { DurableCronJobError, ScheduleModuleConflictError } from '../errors/jobs.errors.js';
import { cronMethodTask } from './cron-method-task.js';
import type { CronMethodMetadata } from './cron-method-task.js';
import { DURABLE_CRON_METADATA } from './durable-cron.decorator.js';
import type { DurableCronOptions } from './jobs-schedule-options.interface.js';
import { JOBS_SCHEDULE_OPTIONS } from './jobs-schedule-options.interface.js';
import type { ResolvedJobsScheduleOptions } from './jobs-schedule-options.interface.js';
import { readCronMetadataKeys } from './schedule-metadata.js';
import type { SchedulePeer } from './schedule-peer.js';

/** Injection token of `@nestjs/schedule` as loaded at boot, and its options provider's token. */
export const SCHEDULE_PEER = Symbol('nestjs-pg-jobs:schedule-peer');

export interface LoadedSchedulePeer {
  readonly peer: SchedulePeer;
  /** The token under which `ScheduleModule.forRoot()` provides its options. */
  readonly optionsToken: InjectionToken;
}

type BridgedTask = ReturnType<JobTaskSource['jobTasks']>[number];

/**
 * Finds the app's `@Cron()` methods (on providers and controllers, as `@nestjs/schedule` does) and
 * hands each to the `TaskRegistry` as a task, with its static schedule, whose run invokes the
 * method on the instance Nest made. The registry asks for them while `JobsModule` initialises:
 * a failure here fails that guarded step, which releases what the module had opened.
 */
@SetMetadata(JOB_TASK_SOURCE_METADATA, true)
@Injectable()
export class CronMethodExplorer implements JobTaskSource, OnModuleInit {
  private readonly logger = new Logger('JobsSchedule');
  private tasks?: readonly BridgedTask[];
  private readonly durableNames = new Set<string>();

  constructor(
    @Inject(JOBS_SCHEDULE_OPTIONS) private readonly options: ResolvedJobsScheduleOptions,
    @Inject(SCHEDULE_PEER) private readonly schedule: LoadedSchedulePeer,
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(ModulesContainer) private readonly modules: ModulesContainer,
    @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
  ) {}

  /** Without a JobsModule nothing would ever ask for the tasks: the methods would never run. */
  onModuleInit(): void {
    findInApp(this.moduleRef, CronPlannerService, 'JobsScheduleModule');
    this.guardSchedulerRegistry();
  }

  jobTasks(): readonly BridgedTask[] {
    return (this.tasks ??= this.explore());
  }

  private explore(): BridgedTask[] {
    this.assertNoCronScheduleModule();
    const keys = readCronMetadataKeys(this.schedule.peer);
    const tasks: BridgedTask[] = [];
    for (const wrapper of [...this.discovery.getControllers(), ...this.discovery.getProviders()]) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      const prototype = instance && typeof instance === 'object' && Object.getPrototypeOf(instance);
      if (!prototype) continue;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const target = prototype[method] as (...args: unknown[]) => unknown;
        if (Reflect.getMetadata(keys.type, target) !== keys.cronType) continue;
        const className = `${instance.constructor.name}.${method}`;
        if (!wrapper.isDependencyTreeStatic()) {
          this.logger.warn(
            `@Cron() method ${className} is not scheduled: its provider is request- or transient-scoped.`,
          );
          continue;
        }
        const { options, unnamed } = cronMethodTask(
          className,
          Reflect.getMetadata(keys.options, target) as CronMethodMetadata,
          Reflect.getMetadata(DURABLE_CRON_METADATA, target) as DurableCronOptions | undefined,
          this.options,
        );
        if (unnamed && options.cron !== undefined) {
          this.logger.warn(
            `@Cron() method ${className} has no name: its durable schedule is named "${options.name}", ` +
              'which changes if the class is renamed or minified. Give @Cron() a name.',
          );
        }
        this.durableNames.add(options.name);
        tasks.push({
          options,
          className,
          handler: {
            run: async () => {
              await target.call(instance);
            },
          },
        });
      }
    }
    return tasks;
  }

  /**
   * One `ScheduleModule.forRoot()` only, JobsScheduleModule's own, without cron jobs: another one
   * would run every `@Cron()` method at every tick on every instance (and its intervals twice).
   */
  private assertNoCronScheduleModule(): void {
    const imports = [...this.modules.values()].flatMap((module) => {
      const wrapper = module.providers.get(this.schedule.optionsToken);
      if (!wrapper) return [];
      return [{ cronJobs: (wrapper.instance as { cronJobs?: unknown })?.cronJobs !== false }];
    });
    if (imports.length > 1 || imports.some((options) => options.cronJobs)) {
      throw new ScheduleModuleConflictError(imports);
    }
  }

  /**
   * `SchedulerRegistry` is the class users inject, and the one `@nestjs/schedule` mounts intervals
   * and timeouts in: it cannot be replaced by a provider of ours without splitting it in two. So
   * only its `getCronJob` (which `deleteCronJob` calls) is wrapped, to name the durable
   * alternative for a bridged method instead of saying that no such job exists.
   */
  private guardSchedulerRegistry(): void {
    // The peer is loaded at boot, so its class is looked up rather than injected by a decorator.
    const registry = this.moduleRef.get<SchedulerRegistry>(this.schedule.peer.SchedulerRegistry, {
      strict: false,
    });
    const getCronJob = registry.getCronJob.bind(registry);
    registry.getCronJob = (name: string) => {
      if (this.durableNames.has(name) && !registry.doesExist('cron', name)) {
        throw new DurableCronJobError(name);
      }
      return getCronJob(name);
    };
  }
}
