export { JobsModule } from './jobs.module.js';
export type { JobsModuleOptions } from './options/jobs-module-options.interface.js';
export * from './options/defaults.js';
export { JobTask } from './discovery/job-task.decorator.js';
export type {
  JobContext,
  JobTaskHandler,
  JobTaskOptions,
} from './discovery/job-task.interfaces.js';
export { JobQueueService } from './queue/job-queue.service.js';
export type { AddJobOptions, AddedJob } from './queue/add-job-options.interface.js';
export type { JobInfo, JobState } from './queue/job-info.interface.js';
export { ReaperService } from './reaper/reaper.service.js';
export { CronPlannerService } from './cron/cron-planner.service.js';
export type {
  CronScheduleOptions,
  MissedSlotPolicy,
  ScheduleInfo,
  ScheduleSource,
} from './cron/cron-schedule.interface.js';
export * from './errors/jobs.errors.js';
export { JobEventsService } from './events/job-events.service.js';
export type * from './events/job-lifecycle-event.interface.js';
export { RetentionService } from './retention/retention.service.js';
export { JobsMetricsModule } from './metrics/jobs-metrics.module.js';
export { JobsMetrics, JobsMetricsService } from './metrics/jobs-metrics.service.js';
export type { JobsMetricsModuleOptions } from './metrics/jobs-metrics-options.interface.js';
export { JobsAdminModule } from './admin/jobs-admin.module.js';
export { JobsAdminService } from './admin/jobs-admin.service.js';
export type { TaskStats } from './admin/jobs-admin.service.js';
export type { JobsAdminModuleOptions } from './admin/jobs-admin-options.interface.js';
export type { OverlapPolicy } from './cron/cron-schedule.interface.js';
