import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { availableParallelism, hostname } from 'node:os';
import { resolve as resolvePath } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ResourceLimits } from 'node:worker_threads';
import type { PoolConfig } from 'pg';
import type { DataSource } from 'typeorm';
import { optionChecks } from '../common/option-checks.js';
import { toSchemaName } from '../database/schema-name.js';
import { InvalidModuleOptionError } from '../errors/jobs.errors.js';
import type { CronScheduleOptions } from '../cron-schedule/cron-schedule.interface.js';
import { typescriptSourceOf } from '../typescript-workers/typescript-files.js';
import * as defaults from './defaults.js';
import type { JobsModuleOptions } from './jobs-module-options.interface.js';
import { resolveQueues } from './resolve-queues.js';

/**
 * One option of `JobsModule`: its default, what it means, and its check. The options
 * table is printed from these (`tools/options-table.ts`), and a spec holds the two equal.
 */
export interface OptionEntry<T> {
  /** The default, as docs/options.md shows it. */
  readonly default: string;
  /** What the option means, in one line of docs/options.md. */
  readonly doc: string;
  /**
   * Checks a given value, throwing an `InvalidModuleOptionError` that names the option and the
   * value, and returns it resolved; an absent option (`undefined`) resolves to its default. An
   * option whose default or limit depends on another one is finished in `resolve-options.ts`.
   */
  readonly resolve: (value: unknown, option: string) => T;
}

export const moduleOptionError = (option: string, value: unknown, expectation: string) =>
  new InvalidModuleOptionError(option, value, expectation);
const { integer, seconds, flag } = optionChecks(moduleOptionError);

const NONE = '—';

function duration(fallback: number, doc: string, zeroAllowed = false): OptionEntry<number> {
  return {
    default: `${fallback} s`,
    doc,
    resolve: (value, option) => seconds(option, value, fallback, zeroAllowed),
  };
}

function count(fallback: number, min: number, doc: string): OptionEntry<number> {
  return {
    default: String(fallback),
    doc,
    resolve: (value, option) => integer(option, value ?? fallback, min),
  };
}

function toggle(fallback: boolean, doc: string): OptionEntry<boolean> {
  return {
    default: `\`${fallback}\``,
    doc,
    resolve: (value, option) => flag(option, value, fallback),
  };
}

/** Every option of `JobsModuleOptions`, in docs/options.md's order. */
export const OPTION_TABLE = {
  connection: {
    default: NONE,
    doc: 'a connection string or `pg` pool options; the module owns this pool',
    resolve: resolveConnection,
  },
  dataSource: {
    default: NONE,
    doc: "instead of `connection`: an app's TypeORM `DataSource` (postgres) to share; never closed by the module",
    resolve: resolveDataSource,
  },
  schema: {
    default: `\`${defaults.DEFAULT_SCHEMA}\``,
    doc: "schema of the module's tables (a lower-case identifier)",
    resolve: (value: unknown) => toSchemaName(value ?? defaults.DEFAULT_SCHEMA),
  },
  migrate: toggle(
    true,
    'run the migrations at boot (one instance at a time); with `false` the boot fails if the schema is not current',
  ),
  migrationLockTimeout: duration(
    defaults.DEFAULT_MIGRATION_LOCK_TIMEOUT,
    'how long a booting instance waits while another migrates the schema; then `MigrationLockTimeoutError`',
  ),
  migrationTableLockTimeout: duration(
    defaults.DEFAULT_MIGRATION_TABLE_LOCK_TIMEOUT,
    'how long a migration waits for a table lock before it lets the fleet write and retries; then `MigrationBlockedError`',
  ),
  preparedStatements: toggle(
    true,
    'run the hot path as named prepared statements; `false` behind PgBouncer in transaction mode before 1.21',
  ),
  instanceId: {
    default: 'host:pid:random',
    doc: "this instance's name in history and `application_name`",
    resolve: resolveInstanceId,
  },
  workers: {
    default: "`'auto'`",
    doc: 'CPUs − 1, at least 1',
    resolve: resolveWorkers,
  },
  concurrency: {
    default: '10 or `workers`',
    doc: 'jobs this instance runs at once, in-process and worker tasks together; the larger of the two',
    resolve: (value: unknown, option: string) =>
      value === undefined ? undefined : integer(option, value, 1),
  },
  queues: {
    default: '`{}`',
    doc: 'named queues: `{ [name]: { concurrency?, globalConcurrency?, rateLimit?, groupConcurrency?, paused? } }`',
    resolve: resolveQueues,
  },
  pollingCheck: duration(
    defaults.DEFAULT_POLLING_CHECK,
    'poll for due jobs: the backstop for notifications, and what starts delayed jobs',
  ),
  scheduledCheck: duration(
    defaults.DEFAULT_SCHEDULED_CHECK,
    'reaping (and cron planning) interval',
  ),
  maxRetries: count(defaults.DEFAULT_MAX_RETRIES, 0, 'retries after the first attempt'),
  retryBackoff: duration(defaults.DEFAULT_RETRY_BACKOFF, 'base of the exponential backoff', true),
  maxRetryDelay: {
    ...duration(
      defaults.DEFAULT_MAX_RETRY_DELAY,
      'the longest a retry waits, however many attempts failed',
    ),
    resolve: resolveMaxRetryDelay,
  },
  taskTimeout: duration(defaults.DEFAULT_TASK_TIMEOUT, 'per attempt'),
  staleJobTimeout: duration(
    defaults.DEFAULT_STALE_JOB_TIMEOUT,
    'an `active` job older than this is presumed abandoned and requeued by `ReaperService`',
  ),
  heartbeatInterval: duration(
    defaults.DEFAULT_HEARTBEAT_INTERVAL,
    'how often an instance writes its heartbeat',
  ),
  instanceTimeout: duration(
    defaults.DEFAULT_INSTANCE_TIMEOUT,
    'an instance silent this long is presumed dead and its `active` jobs are requeued (at least 2 × `heartbeatInterval`)',
  ),
  shutdownTimeout: duration(
    defaults.DEFAULT_SHUTDOWN_TIMEOUT,
    'how long shutdown waits for running jobs',
    true,
  ),
  promiseTimeout: duration(
    defaults.DEFAULT_PROMISE_TIMEOUT,
    "how long an awaited job's promise waits",
  ),
  historyExpiration: duration(
    defaults.DEFAULT_HISTORY_EXPIRATION,
    'ended jobs older than this are pruned from `jobHistory` (`0`: never)',
    true,
  ),
  historyPruneBatchSize: count(
    defaults.DEFAULT_HISTORY_PRUNE_BATCH_SIZE,
    1,
    'rows one pruning statement deletes at most',
  ),
  historyPartitionInterval: {
    default: '¼ `historyExpiration` (60 s - 1 day)',
    doc: 'the time each partition of `jobHistory` covers: a partition is dropped whole once all its jobs expired (`0`: one table, pruned by `DELETE`s in batches, no DDL at run time)',
    // Absent, it is left for the step that derives it from historyExpiration.
    resolve: (value: unknown, option: string) =>
      value === undefined ? undefined : seconds(option, value, 0, true),
  },
  errorSearchIndex: toggle(
    true,
    "keep a trigram index of history's errors for searches by error text (installs `pg_trgm` if it can; warns once if not)",
  ),
  maxResultBytes: count(
    defaults.DEFAULT_MAX_RESULT_BYTES,
    1,
    "bytes of JSON a task's result may take (1 MiB); a larger one fails the attempt",
  ),
  progressInterval: duration(
    defaults.DEFAULT_PROGRESS_INTERVAL,
    "the shortest time between two writes of one job's `ctx.reportProgress` (the last value is always written)",
    true,
  ),
  allowUnknownTasks: toggle(false, 'accept jobs for tasks this instance has no handler for'),
  runJobs: toggle(true, '`false`: this instance only enqueues'),
  schedules: {
    default: '`[]`',
    doc: 'static cron schedules: `{ name, task, cron, timezone?, payload?, missedSlots?, missedSlotGrace?, overlap? }`',
    resolve: resolveScheduleList,
  },
  scheduleHorizon: duration(defaults.DEFAULT_SCHEDULE_HORIZON, 'how far ahead the planner plans'),
  maxPlannedSlots: count(
    defaults.DEFAULT_MAX_PLANNED_SLOTS,
    1,
    'planned slots per schedule at most',
  ),
  missedSlotGrace: {
    ...duration(
      defaults.DEFAULT_MISSED_SLOT_GRACE,
      'a cron job not started this long after its slot is missed; > `pollingCheck` (default: at least 2 × it)',
    ),
    // Absent, it is left for the step that compares it with `pollingCheck`.
    resolve: (value: unknown, option: string) =>
      value === undefined ? undefined : seconds(option, value, defaults.DEFAULT_MISSED_SLOT_GRACE),
  },
  workerModule: {
    default: NONE,
    doc: 'the module every pool thread boots (needed for `worker: true` tasks)',
    resolve: resolveWorkerModule,
  },
  workerResourceLimits: {
    default: NONE,
    doc: '`resourceLimits` of each thread; a thread over them dies and its job fails',
    resolve: resolveResourceLimits,
  },
  workerTimeoutGrace: duration(
    defaults.DEFAULT_WORKER_TIMEOUT_GRACE,
    'how long a thread may take to answer after its signal aborted',
  ),
  workerStartTimeout: duration(
    defaults.DEFAULT_WORKER_START_TIMEOUT,
    'how long the first thread may take to boot (else the boot fails), and a job may wait for a thread to start it (booting, or busy with its batch) before its timeout starts anyway',
  ),
  workerExecArgv: {
    default: 'inherited',
    doc: '`execArgv` of the pool threads',
    resolve: resolveExecArgv,
  },
  telemetry: toggle(
    true,
    'OpenTelemetry spans (one per enqueue, one per attempt) when `@opentelemetry/api` is installed',
  ),
} satisfies { readonly [Name in keyof JobsModuleOptions]-?: OptionEntry<unknown> };

/** Each option as its own entry resolves it, before the checks between options. */
export type EachOptionResolved = {
  -readonly [Name in keyof typeof OPTION_TABLE]: ReturnType<(typeof OPTION_TABLE)[Name]['resolve']>;
};

function resolveConnection(value: unknown, option: string): PoolConfig | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && value.length > 0) return { connectionString: value };
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    return { ...(value as PoolConfig) };
  }
  throw moduleOptionError(
    option,
    value,
    'must be a connection string or pg pool options (or pass "dataSource")',
  );
}

function resolveDataSource(value: unknown, option: string): DataSource | undefined {
  if (value === undefined) return undefined;
  const type = (value as { options?: { type?: unknown } })?.options?.type;
  if (type !== 'postgres') {
    throw moduleOptionError(option, type, 'must be a TypeORM DataSource of type "postgres"');
  }
  return value as DataSource;
}

function resolveInstanceId(value: unknown, option: string): string {
  if (value === undefined) return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  if (typeof value !== 'string' || value.length === 0 || value.length > 200) {
    throw moduleOptionError(option, value, 'must be a non-empty string of at most 200 characters');
  }
  return value;
}

function resolveWorkers(value: unknown, option: string): number {
  if (value === undefined || value === 'auto') return Math.max(1, availableParallelism() - 1);
  return integer(option, value, 1);
}

function resolveMaxRetryDelay(value: unknown, option: string): number {
  const delay = seconds(option, value, defaults.DEFAULT_MAX_RETRY_DELAY);
  // A retry due after the end of PostgreSQL's timestamps could not be written at all.
  if (delay > defaults.MAX_RETRY_DELAY_LIMIT) {
    throw moduleOptionError(
      option,
      value,
      `must be at most ${defaults.MAX_RETRY_DELAY_LIMIT} seconds (about 100 years)`,
    );
  }
  return delay;
}

/** The schedules themselves are checked once the module's `missedSlotGrace` is known. */
function resolveScheduleList(value: unknown, option: string): readonly CronScheduleOptions[] {
  if (value === undefined) return [];
  if (!Array.isArray(value))
    throw moduleOptionError(option, value, 'must be an array of schedules');
  return value;
}

function resolveWorkerModule(
  value: unknown,
  option: string,
): { url: string; exportName?: string } | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0) {
    throw moduleOptionError(option, value, 'must be the path of a file exporting a Nest module');
  }
  const hash = value.lastIndexOf('#');
  const location = hash > 0 ? value.slice(0, hash) : value;
  const exportName = hash > 0 ? value.slice(hash + 1) : undefined;
  const named = location.startsWith('file:') ? fileURLToPath(location) : resolvePath(location);
  // `./x.module.js` beside the code that names it: the compiled file in production, its `.ts`
  // source where the app runs from TypeScript (its tests): one form for both, as in an import.
  const file = [named, typescriptSourceOf(named)].find((path) => existsSync(path));
  if (!file) throw moduleOptionError(option, value, `names no file (looked for ${named})`);
  return { url: pathToFileURL(file).href, ...(exportName ? { exportName } : {}) };
}

function resolveResourceLimits(value: unknown, option: string): ResourceLimits | undefined {
  if (value === undefined) return undefined;
  const ok =
    value !== null &&
    typeof value === 'object' &&
    Object.values(value).every((limit) => typeof limit === 'number' && limit > 0);
  if (!ok) throw moduleOptionError(option, value, 'must be an object of positive numbers');
  return { ...(value as ResourceLimits) };
}

function resolveExecArgv(value: unknown, option: string): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((arg) => typeof arg !== 'string')) {
    throw moduleOptionError(option, value, 'must be an array of strings');
  }
  return [...value];
}
