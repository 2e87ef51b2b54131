import { Inject, Injectable, Logger } from '@nestjs/common';
import { DatabaseStepStore } from './steps/step-store.js';
import { stepsSql } from './steps/steps.sql.js';
import type {
  BeforeApplicationShutdown,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { CronPlannerService } from './cron-planner/cron-planner.service.js';
import { JobsDatabase } from './database/jobs-database.js';
import { TaskRegistry } from './discovery/task-registry.js';
import { InstanceHeartbeat } from './instances/instance-heartbeat.js';
import { NotificationListener } from './notify/notification-listener.js';
import { InvalidJobTaskOptionError } from './errors/jobs.errors.js';
import { attemptOverrun, OVERRUN_HAZARD } from './options/attempt-overrun.js';
import { JOBS_OPTIONS } from './options/resolved-options.js';
import type { ResolvedJobsOptions } from './options/resolved-options.js';
import { CompletionWaiters } from './job-queue/completion-waiters.js';
import { QueueStateService } from './queue-state/queue-state.service.js';
import { ReaperService } from './reaper/reaper.service.js';
import { MinuteStatsRecorder } from './minute-stats/minute-stats-recorder.js';
import { RetentionService } from './retention/retention.service.js';
import { JobRunner } from './runner/job-runner.js';
import { SchemaMigrator } from './schema/schema-migrator.js';
import { WorkerPool } from './worker-pool/worker-pool.js';

/**
 * Starts and stops the module's parts in an order that loses nothing:
 * - init: the schema is brought up to date and the task handlers and static schedules are
 *   found, so a bad handler or schedule fails the boot; with a `workerModule`, the pool's first
 *   thread boots it and reports its worker tasks (an instance that runs no jobs stops the pool
 *   once it knows their names);
 * - bootstrap (the app is ready): listen, register the instance and start heartbeating, reap
 *   what a previous life left behind, plan the cron slots (catch-up runs included), then claim;
 * - before shutdown: stop claiming and drain while the connections (ours and a shared
 *   DataSource) are still open, then stop the worker pool and deregister. Its waits are bounded:
 *   the drain by `shutdownTimeout`, each tick's round in progress by `TICK_STOP_TIMEOUT_MS`;
 * - shutdown: close the connections this module owns.
 */
@Injectable()
export class JobsLifecycle
  implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown
{
  private readonly logger = new Logger('Jobs');

  constructor(
    @Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
    @Inject(TaskRegistry) private readonly registry: TaskRegistry,
    @Inject(NotificationListener) private readonly listener: NotificationListener,
    @Inject(CompletionWaiters) private readonly waiters: CompletionWaiters,
    @Inject(JobRunner) private readonly runner: JobRunner,
    @Inject(ReaperService) private readonly reaper: ReaperService,
    @Inject(RetentionService) private readonly retention: RetentionService,
    @Inject(CronPlannerService) private readonly planner: CronPlannerService,
    @Inject(WorkerPool) private readonly workerPool: WorkerPool,
    @Inject(InstanceHeartbeat) private readonly heartbeat: InstanceHeartbeat,
    @Inject(QueueStateService) private readonly queues: QueueStateService,
    @Inject(MinuteStatsRecorder) private readonly minuteStats: MinuteStatsRecorder,
  ) {}

  async onModuleInit(): Promise<void> {
    try {
      const migrator = new SchemaMigrator(this.db, {
        lockTimeout: this.options.migrationLockTimeout,
        tableLockTimeout: this.options.migrationTableLockTimeout,
      });
      if (this.options.migrate) await migrator.migrate();
      else await migrator.assertCurrent();
      this.registry.discover();
      // Worker task names first: a static schedule may name a worker task.
      if (this.workerPool.enabled) await this.startWorkerPool();
      this.assertTaskTimeouts();
      this.assertTransactionPeer();
      await this.planner.prepare();
    } catch (err) {
      // Nest runs no shutdown hook for a boot that failed: the pool (and the pool's threads, which
      // keep the process alive) would outlive the app.
      await this.workerPool.stop();
      await this.db.close();
      throw err;
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    try {
      await this.start();
    } catch (err) {
      // As at init, no shutdown hook follows a failed boot: what started (the LISTEN session, the
      // heartbeat, the ticks, the pool's threads, the connections) must stop here, or the process
      // could never exit. Every stop is safe on a part that never started.
      await this.beforeApplicationShutdown().catch(() => undefined);
      await this.onApplicationShutdown();
      throw err;
    }
  }

  private async start(): Promise<void> {
    // Each service subscribed to the notifications it owns when it was made.
    await this.listener.start();
    this.waiters.start();
    // Before the first claim: a paused queue's jobs must not start on a booting instance.
    await this.queues.start();
    // Registered before anything is claimed: a peer's reaper takes an unregistered executor for dead.
    await this.heartbeat.start();
    if (this.options.runJobs) await this.reaper.start();
    await this.planner.start();
    if (this.options.runJobs) this.retention.start();
    if (this.options.runJobs) this.minuteStats.start();
    this.runner.start();
    this.logger.log(
      `Started instance ${this.options.instanceId} (schema ${this.db.schema.name}, ` +
        `tasks: ${this.registry.names.join(', ') || 'none'}, concurrency ${this.options.concurrency}, ` +
        `worker threads ${this.workerPool.enabled ? this.options.workers : 'none'}).`,
    );
  }

  async beforeApplicationShutdown(): Promise<void> {
    try {
      await Promise.all([
        this.runner.stop().then(() => this.workerPool.stop()),
        this.reaper.stop(),
        this.planner.stop(),
        this.retention.stop(),
        this.minuteStats.stop(),
      ]);
    } finally {
      // Only once drained: until then the instance still vouches for its running jobs. And even if
      // draining failed: a heartbeat left ticking would keep the process alive.
      await this.heartbeat.stop();
      await this.waiters.stop();
      await this.queues.stop();
    }
  }

  /** A task's own `timeout` against `staleJobTimeout`, as `taskTimeout` was at option resolution. */
  private assertTaskTimeouts(): void {
    for (const { options: task, className } of this.registry.all) {
      if (task.timeout === undefined) continue;
      const overrun = attemptOverrun(this.options, task.timeout, task.worker === true);
      if (!overrun) continue;
      throw new InvalidJobTaskOptionError(
        className,
        'timeout',
        task.timeout,
        `+ ${overrun.extras} = ${overrun.longest}s must stay below the JobsModule option ` +
          `staleJobTimeout (${this.options.staleJobTimeout}s), ${OVERRUN_HAZARD}`,
      );
    }
  }

  /** A `transactional` task's `ctx.manager` is TypeORM's: without it, the boot fails, naming the task. */
  private assertTransactionPeer(): void {
    for (const { options: task, className } of this.registry.all) {
      if (!task.transactional) continue;
      this.db.assertTransactionsPossible(
        `Task "${task.name}" (@JobTask({ transactional: true }) on ${className})`,
      );
    }
  }

  private async startWorkerPool(): Promise<void> {
    const steps = new DatabaseStepStore(this.db, stepsSql(this.db.schema));
    this.registry.addWorkerTasks(await this.workerPool.start(steps), 'workerModule');
    if (!this.options.runJobs) await this.workerPool.stop();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.listener.stop();
    await this.db.close();
  }
}
