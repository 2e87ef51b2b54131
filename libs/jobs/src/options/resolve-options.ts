import { assertOptionsObject } from '../common/assert-options-object.js';
import { availableParallelism, hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { PoolConfig } from 'pg';
import { validateSchedule } from '../schedule/validate-schedule.js';
import type { ValidatedSchedule } from '../schedule/validate-schedule.js';
import { toSchemaName } from '../database/schema-name.js';
import { InvalidModuleOptionError } from '../errors/jobs.errors.js';
import { attemptOverrun, OVERRUN_HAZARD } from './attempt-overrun.js';
import * as defaults from './defaults.js';
import { optionChecks } from '../common/option-checks.js';
import type { JobsModuleOptions } from './jobs-module-options.interface.js';
import type { ResolvedJobsOptions } from './resolved-options.js';

const optionError = (option: string, value: unknown, expectation: string) =>
  new InvalidModuleOptionError(option, value, expectation);
const { integer, seconds, flag } = optionChecks(optionError);

const KNOWN_OPTIONS = new Set<string>([
  'connection',
  'dataSource',
  'schema',
  'migrate',
  'migrationLockTimeout',
  'preparedStatements',
  'instanceId',
  'workers',
  'workerModule',
  'workerResourceLimits',
  'workerTimeoutGrace',
  'workerStartTimeout',
  'workerExecArgv',
  'concurrency',
  'pollingCheck',
  'scheduledCheck',
  'maxRetries',
  'retryBackoff',
  'maxRetryDelay',
  'taskTimeout',
  'staleJobTimeout',
  'heartbeatInterval',
  'instanceTimeout',
  'shutdownTimeout',
  'promiseTimeout',
  'historyExpiration',
  'historyPruneBatchSize',
  'allowUnknownTasks',
  'runJobs',
  'schedules',
  'scheduleHorizon',
  'maxPlannedSlots',
  'missedSlotGrace',
]);

/**
 * Validates the module options once, at boot, and applies the defaults. Every message names the
 * option and the value it was given.
 */
export function resolveJobsOptions(options: JobsModuleOptions): ResolvedJobsOptions {
  assertOptionsObject(options, KNOWN_OPTIONS, optionError);
  const resolved = resolveEach(options);
  const overrun = attemptOverrun(
    resolved,
    resolved.taskTimeout,
    resolved.workerModule !== undefined,
  );
  if (overrun) {
    throw new InvalidModuleOptionError(
      'staleJobTimeout',
      resolved.staleJobTimeout,
      `must exceed taskTimeout (${resolved.taskTimeout}s) + ${overrun.extras} = ${overrun.longest}s, ${OVERRUN_HAZARD}`,
    );
  }
  return resolved;
}

function resolveEach(options: JobsModuleOptions): ResolvedJobsOptions {
  const workers = resolveWorkers(options.workers);
  const pollingCheck = seconds(
    'pollingCheck',
    options.pollingCheck,
    defaults.DEFAULT_POLLING_CHECK,
  );
  const missedSlotGrace = resolveMissedSlotGrace(options.missedSlotGrace, pollingCheck);
  return {
    ...resolveConnection(options),
    schema: toSchemaName(options.schema ?? defaults.DEFAULT_SCHEMA),
    migrate: flag('migrate', options.migrate, true),
    migrationLockTimeout: seconds(
      'migrationLockTimeout',
      options.migrationLockTimeout,
      defaults.DEFAULT_MIGRATION_LOCK_TIMEOUT,
    ),
    preparedStatements: flag('preparedStatements', options.preparedStatements, true),
    instanceId: resolveInstanceId(options.instanceId),
    workers,
    ...resolveWorkerPool(options),
    concurrency: integer('concurrency', options.concurrency ?? workers, 1),
    pollingCheck,
    scheduledCheck: seconds(
      'scheduledCheck',
      options.scheduledCheck,
      defaults.DEFAULT_SCHEDULED_CHECK,
    ),
    maxRetries: integer('maxRetries', options.maxRetries ?? defaults.DEFAULT_MAX_RETRIES, 0),
    retryBackoff: seconds(
      'retryBackoff',
      options.retryBackoff,
      defaults.DEFAULT_RETRY_BACKOFF,
      true,
    ),
    maxRetryDelay: resolveMaxRetryDelay(options.maxRetryDelay),
    taskTimeout: seconds('taskTimeout', options.taskTimeout, defaults.DEFAULT_TASK_TIMEOUT),
    staleJobTimeout: seconds(
      'staleJobTimeout',
      options.staleJobTimeout,
      defaults.DEFAULT_STALE_JOB_TIMEOUT,
    ),
    ...resolveLiveness(options),
    shutdownTimeout: seconds(
      'shutdownTimeout',
      options.shutdownTimeout,
      defaults.DEFAULT_SHUTDOWN_TIMEOUT,
      true,
    ),
    promiseTimeout: seconds(
      'promiseTimeout',
      options.promiseTimeout,
      defaults.DEFAULT_PROMISE_TIMEOUT,
    ),
    historyExpiration: seconds(
      'historyExpiration',
      options.historyExpiration,
      defaults.DEFAULT_HISTORY_EXPIRATION,
      true,
    ),
    historyPruneBatchSize: integer(
      'historyPruneBatchSize',
      options.historyPruneBatchSize ?? defaults.DEFAULT_HISTORY_PRUNE_BATCH_SIZE,
      1,
    ),
    allowUnknownTasks: flag('allowUnknownTasks', options.allowUnknownTasks, false),
    runJobs: flag('runJobs', options.runJobs, true),
    schedules: resolveSchedules(options.schedules, missedSlotGrace),
    scheduleHorizon: seconds(
      'scheduleHorizon',
      options.scheduleHorizon,
      defaults.DEFAULT_SCHEDULE_HORIZON,
    ),
    maxPlannedSlots: integer(
      'maxPlannedSlots',
      options.maxPlannedSlots ?? defaults.DEFAULT_MAX_PLANNED_SLOTS,
      1,
    ),
    missedSlotGrace,
  };
}

function resolveConnection(
  options: JobsModuleOptions,
): Pick<ResolvedJobsOptions, 'connection' | 'dataSource'> {
  const { connection, dataSource } = options;
  if (connection !== undefined && dataSource !== undefined) {
    throw new InvalidModuleOptionError(
      'dataSource',
      '(a DataSource)',
      'cannot be combined with "connection"',
    );
  }
  if (dataSource !== undefined) {
    const type = (dataSource as { options?: { type?: unknown } })?.options?.type;
    if (type !== 'postgres') {
      throw new InvalidModuleOptionError(
        'dataSource',
        type,
        'must be a TypeORM DataSource of type "postgres"',
      );
    }
    return { dataSource };
  }
  if (typeof connection === 'string' && connection.length > 0) {
    return { connection: { connectionString: connection } };
  }
  if (connection !== null && typeof connection === 'object' && !Array.isArray(connection)) {
    return { connection: { ...(connection as PoolConfig) } };
  }
  throw new InvalidModuleOptionError(
    'connection',
    connection,
    'must be a connection string or pg pool options (or pass "dataSource")',
  );
}

function resolveMaxRetryDelay(value: unknown): number {
  const delay = seconds('maxRetryDelay', value, defaults.DEFAULT_MAX_RETRY_DELAY);
  // A retry due after the end of PostgreSQL's timestamps could not be written at all.
  if (delay > defaults.MAX_RETRY_DELAY_LIMIT) {
    throw new InvalidModuleOptionError(
      'maxRetryDelay',
      value,
      `must be at most ${defaults.MAX_RETRY_DELAY_LIMIT} seconds (about 100 years)`,
    );
  }
  return delay;
}

function resolveLiveness(
  options: JobsModuleOptions,
): Pick<ResolvedJobsOptions, 'heartbeatInterval' | 'instanceTimeout'> {
  const heartbeatInterval = seconds(
    'heartbeatInterval',
    options.heartbeatInterval,
    defaults.DEFAULT_HEARTBEAT_INTERVAL,
  );
  const instanceTimeout = seconds(
    'instanceTimeout',
    options.instanceTimeout,
    defaults.DEFAULT_INSTANCE_TIMEOUT,
  );
  // One late heartbeat (a GC pause, a slow query) must not get a live instance's jobs requeued.
  if (instanceTimeout < 2 * heartbeatInterval) {
    throw new InvalidModuleOptionError(
      'instanceTimeout',
      instanceTimeout,
      `must be at least twice heartbeatInterval (${heartbeatInterval}s), so that one late heartbeat does not get a live instance presumed dead`,
    );
  }
  return { heartbeatInterval, instanceTimeout };
}

/**
 * A due cron job that no notification announces (planned jobs become due by the clock, not by an
 * insert) is claimed on the next poll: with a grace shorter than `pollingCheck`, an idle cluster
 * would skip slots. So the default grows with `pollingCheck`, and a given grace must exceed it.
 */
function resolveMissedSlotGrace(value: unknown, pollingCheck: number): number {
  if (value === undefined) return Math.max(defaults.DEFAULT_MISSED_SLOT_GRACE, 2 * pollingCheck);
  const grace = seconds('missedSlotGrace', value, defaults.DEFAULT_MISSED_SLOT_GRACE);
  if (grace <= pollingCheck) {
    throw new InvalidModuleOptionError(
      'missedSlotGrace',
      grace,
      `must be longer than pollingCheck (${pollingCheck}s): a cron job that falls due just after a poll waits for the next one, and would be skipped as missed`,
    );
  }
  return grace;
}

/** Each schedule throws its own typed error (`InvalidCronExpressionError`, ...), naming the schedule. */
function resolveSchedules(value: unknown, missedSlotGrace: number): readonly ValidatedSchedule[] {
  if (value === undefined) return [];
  if (!Array.isArray(value))
    throw new InvalidModuleOptionError('schedules', value, 'must be an array of schedules');
  return value.map((schedule) => validateSchedule(schedule, 'static', missedSlotGrace));
}

function resolveWorkers(value: unknown): number {
  if (value === undefined || value === 'auto') return Math.max(1, availableParallelism() - 1);
  return integer('workers', value, 1);
}

function resolveWorkerPool(
  options: JobsModuleOptions,
): Pick<
  ResolvedJobsOptions,
  | 'workerModule'
  | 'workerResourceLimits'
  | 'workerTimeoutGrace'
  | 'workerStartTimeout'
  | 'workerExecArgv'
> {
  const { workerModule, workerResourceLimits, workerExecArgv } = options;
  const workerTimeoutGrace = seconds(
    'workerTimeoutGrace',
    options.workerTimeoutGrace,
    defaults.DEFAULT_WORKER_TIMEOUT_GRACE,
  );
  if (workerResourceLimits !== undefined) {
    const limits = workerResourceLimits as Record<string, unknown>;
    const ok =
      limits !== null &&
      typeof limits === 'object' &&
      Object.values(limits).every((value) => typeof value === 'number' && value > 0);
    if (!ok) {
      throw new InvalidModuleOptionError(
        'workerResourceLimits',
        workerResourceLimits,
        'must be an object of positive numbers',
      );
    }
  }
  if (
    workerExecArgv !== undefined &&
    (!Array.isArray(workerExecArgv) || workerExecArgv.some((arg) => typeof arg !== 'string'))
  ) {
    throw new InvalidModuleOptionError(
      'workerExecArgv',
      workerExecArgv,
      'must be an array of strings',
    );
  }
  return {
    workerModule: workerModule === undefined ? undefined : resolveWorkerModule(workerModule),
    workerStartTimeout: seconds(
      'workerStartTimeout',
      options.workerStartTimeout,
      defaults.DEFAULT_WORKER_START_TIMEOUT,
    ),
    workerResourceLimits: workerResourceLimits && { ...workerResourceLimits },
    workerTimeoutGrace,
    workerExecArgv: workerExecArgv && [...workerExecArgv],
  };
}

function resolveWorkerModule(value: unknown): { url: string; exportName?: string } {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidModuleOptionError(
      'workerModule',
      value,
      'must be the path of a file exporting a Nest module',
    );
  }
  const hash = value.lastIndexOf('#');
  const location = hash > 0 ? value.slice(0, hash) : value;
  const exportName = hash > 0 ? value.slice(hash + 1) : undefined;
  const file = location.startsWith('file:') ? fileURLToPath(location) : resolvePath(location);
  if (!existsSync(file)) {
    throw new InvalidModuleOptionError('workerModule', value, `names no file (looked for ${file})`);
  }
  return { url: pathToFileURL(file).href, ...(exportName ? { exportName } : {}) };
}

function resolveInstanceId(value: unknown): string {
  if (value === undefined) return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  if (typeof value !== 'string' || value.length === 0 || value.length > 200) {
    throw new InvalidModuleOptionError(
      'instanceId',
      value,
      'must be a non-empty string of at most 200 characters',
    );
  }
  return value;
}
