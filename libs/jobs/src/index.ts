// Every public name, listed (`npm run build` fails if a public declaration needs one that is not).

// The module and its options.
export { JobsModule } from './jobs.module.js';
export type { JobsModuleOptions } from './options/jobs-module-options.interface.js';
export type { QueueOptions, QueueRateLimit } from './options/queue-options.interface.js';

// Defaults of the options (durations in seconds).
export {
  DEFAULT_SCHEMA,
  DEFAULT_MIGRATION_LOCK_TIMEOUT,
  DEFAULT_MIGRATION_TABLE_LOCK_TIMEOUT,
  DEFAULT_POLLING_CHECK,
  DEFAULT_SCHEDULED_CHECK,
  DEFAULT_MAX_RETRIES,
  DEFAULT_RETRY_BACKOFF,
  DEFAULT_MAX_RETRY_DELAY,
  MAX_RETRY_DELAY_LIMIT,
  DEFAULT_TASK_TIMEOUT,
  DEFAULT_CONCURRENCY,
  DEFAULT_STALE_JOB_TIMEOUT,
  DEFAULT_SHUTDOWN_TIMEOUT,
  DEFAULT_PROMISE_TIMEOUT,
  DEFAULT_HEARTBEAT_INTERVAL,
  DEFAULT_INSTANCE_TIMEOUT,
  DEFAULT_WORKER_TIMEOUT_GRACE,
  DEFAULT_WORKER_START_TIMEOUT,
  DEFAULT_SCHEDULE_HORIZON,
  DEFAULT_MAX_PLANNED_SLOTS,
  DEFAULT_MISSED_SLOT_GRACE,
  DEFAULT_HISTORY_EXPIRATION,
  DEFAULT_HISTORY_PRUNE_BATCH_SIZE,
  MIN_HISTORY_PARTITION_INTERVAL,
  MAX_HISTORY_PARTITION_INTERVAL,
  DEFAULT_MAX_RESULT_BYTES,
  DEFAULT_PROGRESS_INTERVAL,
  DEFAULT_QUEUE,
} from './options/defaults.js';

// Task handlers: the decorator and what a handler implements and receives.
export { JobTask } from './discovery/job-task.decorator.js';
export type {
  JobContext,
  JobTaskHandler,
  JobTaskOptions,
  JobBackoff,
} from './discovery/job-task.interfaces.js';

// Typed tasks: a task defined once, with Standard Schema v1 schemas of its payload and result.
export { defineTask } from './discovery/task-definition.js';
export type {
  TaskDefinition,
  TaskDefinitionOptions,
  TaskPayloadInput,
  TaskPayload,
  TaskResultInput,
  TaskResult,
  ResultOf,
  HandlerPayload,
  HandlerReturn,
} from './discovery/task-definition.js';
export type {
  StandardSchemaV1,
  StandardJSONSchemaV1,
  StandardTypedV1,
} from './task-schemas/standard-schema.js';

// Enqueueing and reading jobs.
export { JobQueueService } from './job-queue/job-queue.service.js';
export type {
  AddJobOptions,
  AddTaskJobOptions,
  AddedJob,
} from './job-queue/add-job-options.interface.js';
export type { JobInfo, JobState } from './job-queue/job-info.interface.js';
export type { WaitForJobOptions } from './job-queue/wait-for-job-options.interface.js';
export type {
  JobFilter,
  RetryJobsFilter,
  CancelJobsFilter,
  DeleteJobsFilter,
  RetryableJobState,
  CancellableJobState,
  DeletableJobState,
} from './job-queue/job-filter.interface.js';
export type { QueueInfo } from './queue-state/queue-info.interface.js';

// Maintenance: abandoned attempts and history retention.
export { ReaperService } from './reaper/reaper.service.js';
export { RetentionService } from './retention/retention.service.js';

// Cron schedules.
export { CronPlannerService } from './cron-planner/cron-planner.service.js';
export type {
  CronScheduleOptions,
  MissedSlotPolicy,
  OverlapPolicy,
  ScheduleInfo,
  ScheduleSource,
} from './cron-schedule/cron-schedule.interface.js';

// Errors, all JobsErrors; InvalidJobsOptionError: the deprecated name of InvalidModuleOptionError.
export {
  JobsError,
  InvalidModuleOptionError,
  InvalidJobsOptionError,
  InvalidJobOptionsError,
  UnknownTaskError,
  InvalidPayloadError,
  InstanceIdInUseError,
  InvalidTaskHandlerError,
  InvalidJobTaskOptionError,
  SchemaNotMigratedError,
  MigrationLockTimeoutError,
  MigrationBlockedError,
  DatabaseUnreachableError,
  InvalidScheduleError,
  InvalidCronExpressionError,
  InvalidTimeZoneError,
  UnknownScheduleError,
  InvalidCronOptionError,
  ScheduleModuleConflictError,
  DurableCronJobError,
  JobFailedError,
  JobCancelledError,
  JobPromiseTimeoutError,
  JobTimeoutError,
  JobsShutdownError,
  WorkerDiedError,
  WorkerUnresponsiveError,
  WorkerPoolBootError,
  WorkerPoolStoppedError,
  JobNotFoundError,
  JobContentionError,
  InvalidJobFilterError,
  UnrecoverableJobError,
  JobSnooze,
  InvalidResultError,
  ResultTooLargeError,
  EndingNotRecordedError,
  InvalidContextArgumentError,
  TaskSchemaError,
  InvalidFlowError,
  JobSuspension,
  StepNotRecordedError,
  InvalidEventError,
} from './errors/jobs.errors.js';
export type { SchemaIssue, PayloadRefusal } from './errors/jobs.errors.js';

// Flows: jobs that wait for other jobs.
export type {
  AddFlowOptions,
  AddedFlow,
  DependencyFailurePolicy,
  FlowInfo,
  FlowJobInfo,
  FlowJobOptions,
} from './job-queue/flow-options.interface.js';
export type { JobDependencies, JobDependency } from './discovery/job-task.interfaces.js';

// Durable steps: ctx.step, ctx.sleep, ctx.waitForEvent, and what getJob tells of them.
export type { JobOutcome, JobStepInfo, JobWaitingFor } from './steps/step-info.interface.js';

// Events of this instance's jobs.
export { JobEventsService } from './events/job-events.service.js';
export type {
  JobEvent,
  JobEventType,
  JobLifecycleEvent,
  JobLifecycleEventType,
  JobEventBase,
  JobAddedEvent,
  JobStartedEvent,
  JobCompletedEvent,
  JobFailedEvent,
  JobCancelledEvent,
  JobSkippedEvent,
  SkipReason,
  JobRetriedEvent,
  JobSnoozedEvent,
  JobSuspendedEvent,
  JobResumedEvent,
  JobProgressEvent,
} from './events/job-event.interface.js';

// Prometheus metrics; JobsMetrics: the deprecated name of JobsMetricsService.
export { JobsMetricsModule } from './metrics/jobs-metrics.module.js';
export { JobsMetrics, JobsMetricsService } from './metrics/jobs-metrics.service.js';
export type {
  JobsMetricsModuleOptions,
  MetricsRegistry,
} from './metrics/jobs-metrics-options.interface.js';

// The admin API and dashboard.
export { JobsAdminModule } from './admin/jobs-admin.module.js';
export { JobsAdminService } from './admin/jobs-admin.service.js';
export type { AttemptOutcome } from './common/recorded-attempt.js';
export type {
  AttemptInfo,
  CronSlotInfo,
  FailedAttemptInfo,
  InstanceInfo,
  ListedJobInfo,
  ListedScheduleInfo,
  ScheduleRunInfo,
  TaskDurations,
  TaskStats,
} from './admin/jobs-admin.service.js';
export type {
  QueueDepthPoint,
  QueueDepthReport,
  TaskDurationsReport,
} from './admin/admin-minute-stats.js';
export type { TaskInfo } from './admin/task-list.js';
export type {
  FlowListQuery,
  JobCountQuery,
  JobListCursor,
  JobListQuery,
  JobSearch,
} from './admin/admin-input.js';
export type { FlowProgress, FlowState, ListedFlowInfo } from './admin/flow-progress.js';
export type { JobsAdminModuleOptions } from './admin/jobs-admin-options.interface.js';

// TypeORM: the module's tables as (read-only) entities, its migrations as migration classes.
export {
  JobEntity,
  JobHistoryEntity,
  JobScheduleEntity,
  JobScheduleSlotEntity,
  JobsInstanceEntity,
  jobsEntities,
} from './typeorm/jobs-entities.js';
export type { JobsEntities } from './typeorm/jobs-entities.js';
export { jobsMigrations } from './typeorm/jobs-migrations.js';
export type { JobsMigrationClass } from './typeorm/jobs-migrations.js';

// Errors of the optional parts: a peer dependency missing, the testing kit, TypeORM migrations.
export {
  MissingPeerDependencyError,
  JobsNotIdleError,
  IrreversibleMigrationError,
} from './errors/jobs.errors.js';
