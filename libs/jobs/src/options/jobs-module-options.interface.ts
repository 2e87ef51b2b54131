import type { ResourceLimits } from 'node:worker_threads';
import type { PoolConfig } from 'pg';
import type { DataSource } from 'typeorm';
import type { CronScheduleOptions } from '../cron-schedule/cron-schedule.interface.js';
import type { QueueOptions } from './queue-options.interface.js';

/**
 * Options of `JobsModule.forRoot()` / `forRootAsync()`. Durations are in seconds, as in the seed's
 * configuration; fractions are allowed.
 *
 * @publicApi
 */
export interface JobsModuleOptions {
  /** A connection string or `pg` pool options. The module owns this pool and closes it on shutdown. */
  connection?: string | PoolConfig;
  /**
   * An existing, initialised TypeORM `DataSource` (postgres) to share instead of `connection`. The
   * module borrows its pool and never closes it.
   */
  dataSource?: DataSource;
  /** Schema holding the module's tables. A plain lower-case identifier. Default `jobs`. */
  schema?: string;
  /**
   * Run the hot path's statements (claim, completion, failure, enqueue, look-up) as named prepared
   * statements, parsed and planned once per connection. Default `true`. Set `false` behind a pooler
   * in transaction mode that cannot keep prepared statements (PgBouncer before 1.21, or later
   * without `max_prepared_statements`).
   */
  preparedStatements?: boolean;
  /** Run the schema migrations at boot. Default `true`; when `false` the boot checks the schema is current. */
  migrate?: boolean;
  /**
   * Seconds a booting instance waits for the migration lock while another instance migrates the
   * same schema; past it the boot fails with `MigrationLockTimeoutError`. Default 60. A migration
   * that builds an index concurrently on a large table can take longer: raise it above your
   * longest migration, or boot one instance first.
   */
  migrationLockTimeout?: number;
  /**
   * Seconds a migration's statement waits for a lock on one of the module's tables (its
   * `lock_timeout`). Enqueues and claims of every instance queue behind a waiting `ALTER TABLE`, so
   * the wait is kept short: past it the migration rolls back what it did, lets them through, and
   * tries again after a pause (logged), up to 10 times; then the boot fails with
   * `MigrationBlockedError`, naming the sessions that held the locks. Default 1.
   */
  migrationTableLockTimeout?: number;
  /** Name of this instance in history and `application_name`. Default host, pid and a random suffix. */
  instanceId?: string;
  /** Worker threads for worker tasks: a number, or `'auto'` (CPUs − 1, at least 1). Default `'auto'`. */
  workers?: number | 'auto';
  /**
   * The file each pool thread boots for `@JobTask({ worker: true })` tasks: an absolute path or
   * `file:` URL (a relative path is taken from the working directory) of a module exporting one
   * Nest module, or `path#ExportName` to pick one export. Without it, no thread is started and
   * every task runs in-process. With it, one thread boots at module init and reports the worker
   * task names (so a bad worker module fails the boot); the pool grows to `workers` on demand.
   */
  workerModule?: string;
  /** `resourceLimits` of each pool thread (heap sizes in MB): a thread over them dies and its job fails. */
  workerResourceLimits?: ResourceLimits;
  /**
   * Seconds a pool thread gets to answer after its task's `taskTimeout` aborted `ctx.signal`.
   * Past it the job is recorded failed ("did not answer") and the thread is terminated and
   * replaced. Default 5.
   */
  workerTimeoutGrace?: number;
  /**
   * Seconds a worker job may wait for a thread to start it (a thread booting after another died,
   * or while the pool grows; the jobs ahead of it in its thread's batch) before its `taskTimeout`
   * clock starts anyway. Also the longest the pool's first thread may take to load and boot
   * `workerModule` at the app's boot: past it, the boot fails with `WorkerPoolBootError` and the
   * thread is stopped. Default 60.
   */
  workerStartTimeout?: number;
  /**
   * `execArgv` of pool threads. Default: the main thread's, plus, when the library itself runs from
   * its TypeScript sources, this monorepo's TypeScript loader.
   */
  workerExecArgv?: string[];
  /** How many jobs this instance runs at once. Default: the resolved `workers`. */
  concurrency?: number;
  /**
   * Limits of named queues, by name (see `QueueOptions`). A task joins a queue with
   * `@JobTask({ queue })`; a queue named by a task but not here has no limits. Default `{}`.
   */
  queues?: Readonly<Record<string, QueueOptions>>;
  /** Seconds between polls for due jobs, the backstop for missed notifications. Default 5. */
  pollingCheck?: number;
  /** Seconds between cron planning and reaping rounds. Default 300. */
  scheduledCheck?: number;
  /** Retries after the first attempt, unless the job or its task says otherwise. Default 5. */
  maxRetries?: number;
  /**
   * Base of the retry backoff: retry `n` waits `2^(n-1) * retryBackoff` seconds, at most
   * `maxRetryDelay`. Default 60.
   */
  retryBackoff?: number;
  /** Seconds a retry waits at most, however many attempts failed before. Default 3600 (1 h). */
  maxRetryDelay?: number;
  /**
   * Seconds a task may run before its signal is aborted and the attempt fails. Default 300. With
   * `workerTimeoutGrace` (and, for worker tasks, `workerStartTimeout`) it must stay below
   * `staleJobTimeout`, as must every `@JobTask({ timeout })`: the boot fails otherwise.
   */
  taskTimeout?: number;
  /**
   * Seconds after which an `active` job is presumed abandoned whatever its instance (the fallback
   * for an instance that heartbeats but is stuck). Default 3600.
   */
  staleJobTimeout?: number;
  /** Seconds between this instance's heartbeats in the instances table. Default 5. */
  heartbeatInterval?: number;
  /**
   * Seconds without a heartbeat after which an instance is presumed dead and its `active` jobs are
   * requeued (counting the interrupted attempt). At least twice `heartbeatInterval`. The reaper runs
   * every `scheduledCheck` or every half `instanceTimeout`, whichever is shorter. Default 30.
   */
  instanceTimeout?: number;
  /** Seconds shutdown waits for running jobs before requeueing them. Default 30. */
  shutdownTimeout?: number;
  /** Seconds an `addJob({ promise: true })` caller waits before its promise rejects. Default 600. */
  promiseTimeout?: number;
  /**
   * Seconds an ended job (completed, failed, cancelled, interrupted for good) stays in `jobHistory`
   * before it is pruned, in batches, on every `scheduledCheck`. Default 90000 (25 h); `0` keeps
   * history forever.
   */
  historyExpiration?: number;
  /** Rows one pruning statement deletes at most, so pruning never holds long locks. Default 1000. */
  historyPruneBatchSize?: number;
  /**
   * Seconds of job ids (of enqueue time) each partition of `jobHistory` covers. Partitions are made
   * ahead, and one whose jobs all expired is dropped whole, so retention deletes no rows one by one;
   * an ended job then stays from `historyExpiration` to about `historyExpiration` + two intervals.
   * Default a quarter of `historyExpiration`, from 60 s to one day (6 h 15 min at the default
   * expiration). `0` makes no partitions: every row stays in the one default partition, pruned by
   * `DELETE`s in batches, and no DDL runs at run time, for a small install or a database role that
   * may not create tables (see "History retention" in docs/operations.md).
   */
  historyPartitionInterval?: number;
  /**
   * Keep a trigram index of history's last errors, so that a search by error text (the dashboard's,
   * `listJobs`' `error`) that few jobs match is an index look-up rather than a test of every failed
   * job kept. It needs PostgreSQL's `pg_trgm` extension: used where it is installed, else installed
   * into the module's schema (a trusted extension: a role that may create objects in the database
   * may install it); where it cannot be had, a warning says so once and searches work without it.
   * Built in the background, partition by partition, without stopping writes. It costs an index
   * write per write of a job that carries an error, none for the others. Default `true`.
   */
  errorSearchIndex?: boolean;
  /**
   * Bytes a task's result (what `run()` returns, as JSON) may take at most. A larger result fails
   * its attempt with `ResultTooLargeError`: it would be stored in `jobHistory` and read by every
   * caller awaiting the job. Default 1048576 (1 MiB).
   */
  maxResultBytes?: number;
  /**
   * Seconds between two writes of one job's progress at most often: `ctx.reportProgress` may be
   * called at any rate, the value is written (and its `progress` event sent) at most once per
   * interval, and the last value is always written, at the latest when the attempt ends. `0`
   * writes every report. Default 1.
   */
  progressInterval?: number;
  /** Accept `addJob` for tasks this instance has no handler for (instances that only enqueue). */
  allowUnknownTasks?: boolean;
  /** Claim and run jobs on this instance. Default `true`; `false` makes an enqueue-only instance. */
  runJobs?: boolean;
  /**
   * Cron schedules declared in code, written to the database at boot (see `CronScheduleOptions`).
   * A bad expression, time zone or payload fails the boot.
   */
  schedules?: readonly CronScheduleOptions[];
  /**
   * Seconds ahead the planner plans each schedule's slots. Default 86400 (24 h). Together with
   * `maxPlannedSlots` it bounds how much is planned: a slot is planned once it is among a
   * schedule's next `maxPlannedSlots` slots and within the horizon.
   */
  scheduleHorizon?: number;
  /**
   * The most slots of one schedule planned ahead. Default 10. A frequent schedule stays covered as
   * long as `maxPlannedSlots` slots last longer than `scheduledCheck`; otherwise slots are missed
   * (see `missedSlots`).
   */
  maxPlannedSlots?: number;
  /**
   * Seconds after its slot a cron job may still start, for schedules that set none of their own.
   * A slot whose job has not started by then is missed, whatever kept it waiting (every instance
   * down, or a queue too busy to reach it): `missedSlots` decides whether it is skipped (recorded
   * in history as `skipped`) or, for the latest one, run anyway. A cron job that falls due is
   * noticed on the next poll, so the grace must be longer than `pollingCheck` (and a schedule's own
   * grace longer than the `pollingCheck` of the instances that run it). Default 60, or twice
   * `pollingCheck` if that is longer.
   */
  missedSlotGrace?: number;
  /**
   * OpenTelemetry tracing, when the app has `@opentelemetry/api` installed (and an SDK registered):
   * a producer span for each enqueue, and a consumer span for each attempt, in the enqueue's trace
   * on whichever instance runs it (the trace context is stored with the job). Default `true`;
   * `false` makes no spans and stores no context. Without `@opentelemetry/api` nothing is loaded.
   */
  telemetry?: boolean;
}
