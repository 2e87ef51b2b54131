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
export * from './errors/jobs.errors.js';
