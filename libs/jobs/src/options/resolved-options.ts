import type { ResourceLimits } from 'node:worker_threads';
import type { PoolConfig } from 'pg';
import type { DataSource } from 'typeorm';
import type { ValidatedSchedule } from '../cron/validate-schedule.js';
import type { SchemaName } from '../database/schema-name.js';

/** `JobsModuleOptions` after validation, with every default applied. Internal. */
export interface ResolvedJobsOptions {
  readonly connection?: PoolConfig;
  readonly dataSource?: DataSource;
  readonly schema: SchemaName;
  readonly migrate: boolean;
  readonly migrationLockTimeout: number;
  readonly preparedStatements: boolean;
  readonly instanceId: string;
  readonly workers: number;
  /** The `workerModule` file as a `file:` URL, and the export to boot. */
  readonly workerModule?: { readonly url: string; readonly exportName?: string };
  readonly workerResourceLimits?: ResourceLimits;
  readonly workerTimeoutGrace: number;
  readonly workerStartTimeout: number;
  readonly workerExecArgv?: readonly string[];
  readonly concurrency: number;
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
  readonly historyExpiration: number;
  readonly historyPruneBatchSize: number;
  readonly allowUnknownTasks: boolean;
  readonly runJobs: boolean;
  readonly schedules: readonly ValidatedSchedule[];
  readonly scheduleHorizon: number;
  readonly maxPlannedSlots: number;
  readonly missedSlotGrace: number;
}

/** Injection token of the `ResolvedJobsOptions`. */
export const JOBS_OPTIONS = Symbol('nestjs-pg-jobs:options');
