/** Defaults of `JobsModuleOptions`, in the seed's units (seconds) where the seed had the option. */
export const DEFAULT_SCHEMA = 'jobs';
/** Seconds a booting instance waits for another instance's migration lock before failing the boot. */
export const DEFAULT_MIGRATION_LOCK_TIMEOUT = 60;
/**
 * Seconds a migration's statement waits for a lock on a table (`lock_timeout`) before it lets the
 * fleet's enqueues and claims, queued behind it, go on, and tries again later.
 */
export const DEFAULT_MIGRATION_TABLE_LOCK_TIMEOUT = 1;
export const DEFAULT_POLLING_CHECK = 5;
export const DEFAULT_SCHEDULED_CHECK = 300;
export const DEFAULT_MAX_RETRIES = 5;
export const DEFAULT_RETRY_BACKOFF = 60;
/** Seconds a retry waits at most, however many attempts came before: the backoff's ceiling. */
export const DEFAULT_MAX_RETRY_DELAY = 3600;
/** The largest `maxRetryDelay` accepted (about 100 years): a retry must stay a writable timestamp. */
export const MAX_RETRY_DELAY_LIMIT = 3_155_760_000;
export const DEFAULT_TASK_TIMEOUT = 300;
/**
 * Jobs one instance runs at once when `concurrency` is not given, unless `workers` is larger: tasks
 * in a Nest app mostly wait on I/O (a mail API, a query), so they should not queue behind the CPU
 * count, which is 1 thread (`workers: 'auto'`) on a 2-core container. Ten is pg's default pool size.
 */
export const DEFAULT_CONCURRENCY = 10;
export const DEFAULT_STALE_JOB_TIMEOUT = 3600;
export const DEFAULT_SHUTDOWN_TIMEOUT = 30;
export const DEFAULT_PROMISE_TIMEOUT = 600;
export const DEFAULT_HEARTBEAT_INTERVAL = 5;
export const DEFAULT_INSTANCE_TIMEOUT = 30;
export const DEFAULT_WORKER_TIMEOUT_GRACE = 5;
export const DEFAULT_WORKER_START_TIMEOUT = 60;
/** Seconds ahead the cron planner plans each schedule's slots (the seed's 24 h). */
export const DEFAULT_SCHEDULE_HORIZON = 86_400;
/** Slots of one schedule a planning round plans at most (the seed's cap). */
export const DEFAULT_MAX_PLANNED_SLOTS = 10;
/** Seconds after its slot a cron job may still start; later it is missed (see `missedSlots`). */
export const DEFAULT_MISSED_SLOT_GRACE = 60;
/** Seconds ended jobs stay in `jobHistory` (the seed's `historyExpiration`, as Wiki.js ships it: 25 h). */
export const DEFAULT_HISTORY_EXPIRATION = 90000;
/**
 * Bounds of the default `historyPartitionInterval` (seconds), which is a quarter of
 * `historyExpiration`: rows expire at most about two intervals late, and about seven partitions live.
 */
export const MIN_HISTORY_PARTITION_INTERVAL = 60;
export const MAX_HISTORY_PARTITION_INTERVAL = 86_400;
/** Rows one pruning statement deletes at most. */
export const DEFAULT_HISTORY_PRUNE_BATCH_SIZE = 1000;
/** Bytes of JSON a task's result may take at most (1 MiB): a larger one fails its attempt. */
export const DEFAULT_MAX_RESULT_BYTES = 1_048_576;
/** Seconds between two progress writes of one job at most often (`ctx.reportProgress`). */
export const DEFAULT_PROGRESS_INTERVAL = 1;
/** The queue of a task whose `@JobTask()` names none. */
export const DEFAULT_QUEUE = 'default';
