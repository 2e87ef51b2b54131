/**
 * The library internals the benches measure directly, which the package does not export: the
 * worker pool's dispatch against an in-process run (`bench:workers`), the admin API's statements
 * explained and its per-minute rows filled (`bench:dashboard`) and the runner's claim explained under a held horizon
 * (`bench:horizon`). This is the one place a bench reaches past `nestjs-pg-jobs` into
 * `libs/jobs/src`: when a file moves there, `npm run typecheck` fails here, not a bench at run time.
 */
export { adminSql } from '../libs/jobs/src/admin/admin.sql.js';
export { AttemptAbortController } from '../libs/jobs/src/attempt/attempt-abort-controller.js';
export { runWithTimeout } from '../libs/jobs/src/attempt/run-with-timeout.js';
export { toSchemaName } from '../libs/jobs/src/database/schema-name.js';
export { MinuteStatsRecorder } from '../libs/jobs/src/minute-stats/minute-stats-recorder.js';
export { minuteStatsSql } from '../libs/jobs/src/minute-stats/minute-stats.sql.js';
export { resolveJobsOptions } from '../libs/jobs/src/options/resolve-options.js';
export { runnerSql } from '../libs/jobs/src/runner/runner.sql.js';
export { WorkerPool } from '../libs/jobs/src/worker-pool/worker-pool.js';
