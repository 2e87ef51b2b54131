import type { MissedSlotPolicy } from '../cron-schedule/cron-schedule.interface.js';

/** Retries of a bridged `@Cron()` method by default: none, as under `@nestjs/schedule`. */
export const DEFAULT_BRIDGED_CRON_MAX_RETRIES = 0;

/**
 * Options of `JobsScheduleModule.forRoot()`.
 *
 * @publicApi
 */
export interface JobsScheduleModuleOptions {
  /**
   * Zone of the `@Cron()` methods that give neither `timeZone` nor `utcOffset`: an IANA zone or a
   * fixed offset `UTC+05:30`. Default `'UTC'`. `@nestjs/schedule` reads them in the process's zone;
   * a cluster's instances need not share one, so a durable schedule never does.
   */
  timezone?: string;
  /**
   * Retries of a bridged method whose run throws, unless `@DurableCron({ maxRetries })` says
   * otherwise. Default `0`: as under `@nestjs/schedule`, a failed run is recorded (`failed`, with
   * the error's message) and not run again.
   */
  maxRetries?: number;
}

/**
 * What a durable schedule offers that `@Cron()` has no option for, per method: see `@DurableCron()`.
 *
 * @publicApi
 */
export interface DurableCronOptions {
  /** Retries after a run that throws. Default: `JobsScheduleModule.forRoot({ maxRetries })`, 0. */
  maxRetries?: number;
  /** Seconds a run may take before its attempt fails. Default: the JobsModule's `taskTimeout`. */
  timeout?: number;
  /** What happens to slots that could not start in time (see `MissedSlotPolicy`). Default `'skip'`. */
  missedSlots?: MissedSlotPolicy;
}

/** `JobsScheduleModuleOptions` with the defaults applied. Internal. */
export interface ResolvedJobsScheduleOptions {
  readonly timezone: string;
  readonly maxRetries: number;
}

/** Injection token of the `ResolvedJobsScheduleOptions`. */
export const JOBS_SCHEDULE_OPTIONS = Symbol('nestjs-pg-jobs:schedule-options');
