// The `nestjs-pg-jobs/schedule` entry point: the only files that import `@nestjs/schedule`, kept
// apart from the main entry so that apps without it installed still load the library.
export { JobsScheduleModule } from './jobs-schedule.module.js';
export { DurableCron } from './durable-cron.decorator.js';
export { DEFAULT_BRIDGED_CRON_MAX_RETRIES } from './jobs-schedule-options.interface.js';
export type {
  DurableCronOptions,
  JobsScheduleModuleOptions,
} from './jobs-schedule-options.interface.js';
