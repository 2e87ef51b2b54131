import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { CronPlannerService } from './cron-planner/cron-planner.service.js';
import { JobsDatabase } from './database/jobs-database.js';
import { TaskRegistry } from './discovery/task-registry.js';
import { InstanceHeartbeat } from './instances/instance-heartbeat.js';
import { JobEventEmitter } from './events/job-event-emitter.js';
import { JobEventsService } from './events/job-events.service.js';
import { JobsLifecycle } from './jobs.lifecycle.js';
import { JOBS_MODULE_OPTIONS, JobsConfigurableModule } from './jobs.module-definition.js';
import { NotificationListener } from './notify/notification-listener.js';
import type { JobsModuleOptions } from './options/jobs-module-options.interface.js';
import { resolveJobsOptions } from './options/resolve-options.js';
import { JOBS_OPTIONS } from './options/resolved-options.js';
import type { ResolvedJobsOptions } from './options/resolved-options.js';
import { CompletionWaiters } from './job-queue/completion-waiters.js';
import { JobQueueService } from './job-queue/job-queue.service.js';
import { QueueStateService } from './queue-state/queue-state.service.js';
import { ReaperService } from './reaper/reaper.service.js';
import { MinuteStatsRecorder } from './minute-stats/minute-stats-recorder.js';
import { RetentionService } from './retention/retention.service.js';
import { JobRunner } from './runner/job-runner.js';
import { JobsTelemetry } from './telemetry/jobs-telemetry.js';
import { WorkerPool } from './worker-pool/worker-pool.js';

/**
 * The job queue and scheduler on the app's PostgreSQL.
 *
 * ```ts
 * JobsModule.forRoot({ connection: process.env.DATABASE_URL })
 * JobsModule.forRootAsync({ inject: [ConfigService], useFactory: (c) => ({ connection: c.get('DB') }) })
 * ```
 *
 * @publicApi
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: JOBS_OPTIONS,
      inject: [JOBS_MODULE_OPTIONS],
      useFactory: (options: JobsModuleOptions) => resolveJobsOptions(options),
    },
    {
      provide: JobsDatabase,
      inject: [JOBS_OPTIONS],
      useFactory: (options: ResolvedJobsOptions) => JobsDatabase.connect(options),
    },
    {
      provide: JobsTelemetry,
      inject: [JOBS_OPTIONS],
      useFactory: (options: ResolvedJobsOptions) => JobsTelemetry.load(options),
    },
    TaskRegistry,
    NotificationListener,
    CompletionWaiters,
    QueueStateService,
    JobEventEmitter,
    JobEventsService,
    JobQueueService,
    WorkerPool,
    JobRunner,
    InstanceHeartbeat,
    ReaperService,
    RetentionService,
    MinuteStatsRecorder,
    CronPlannerService,
    JobsLifecycle,
  ],
  exports: [JobQueueService, ReaperService, CronPlannerService, JobEventsService, RetentionService],
})
export class JobsModule extends JobsConfigurableModule {}
