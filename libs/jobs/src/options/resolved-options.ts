import type { ResourceLimits } from 'node:worker_threads';
import type { DatabaseOptions } from '../database/jobs-database.js';
import type { ValidatedSchedule } from '../cron-schedule/validate-schedule.js';
import type { ResolvedQueueOptions } from './resolve-queues.js';

/**
 * `JobsModuleOptions` after validation, with every default applied. Internal. `connection`,
 * `dataSource`, `schema`, `instanceId` and `preparedStatements` are the `DatabaseOptions`.
 */
export interface ResolvedJobsOptions extends DatabaseOptions {
  readonly migrate: boolean;
  readonly migrationLockTimeout: number;
  readonly migrationTableLockTimeout: number;
  readonly workers: number;
  /** The `workerModule` file as a `file:` URL, and the export to boot. */
  readonly workerModule?: { readonly url: string; readonly exportName?: string };
  readonly workerResourceLimits?: ResourceLimits;
  readonly workerTimeoutGrace: number;
  readonly workerStartTimeout: number;
  readonly workerExecArgv?: readonly string[];
  readonly concurrency: number;
  /** The `queues` option: each configured queue's limits, by name. */
  readonly queues: ReadonlyMap<string, ResolvedQueueOptions>;
  readonly pollingCheck: number;
  readonly scheduledCheck: number;
  readonly maxRetries: number;
  readonly retryBackoff: number;
  readonly maxRetryDelay: number;
  readonly taskTimeout: number;
  readonly staleJobTimeout: number;
  readonly heartbeatInterval: number;
  readonly instanceTimeout: number;
  readonly shutdownTimeout: number;
  readonly promiseTimeout: number;
  readonly maxResultBytes: number;
  readonly progressInterval: number;
  readonly historyExpiration: number;
  readonly historyPruneBatchSize: number;
  readonly historyPartitionInterval: number;
  readonly errorSearchIndex: boolean;
  readonly allowUnknownTasks: boolean;
  readonly runJobs: boolean;
  readonly schedules: readonly ValidatedSchedule[];
  readonly scheduleHorizon: number;
  readonly maxPlannedSlots: number;
  readonly missedSlotGrace: number;
  readonly telemetry: boolean;
}

/** Injection token of the `ResolvedJobsOptions`. */
export const JOBS_OPTIONS = Symbol('nestjs-pg-jobs:options');
