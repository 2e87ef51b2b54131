import { Inject, Injectable } from '@nestjs/common';
import { isQueuedState } from '../common/job-states.js';
import { JobsDatabase } from '../database/jobs-database.js';
import type { SqlExecutor } from '../database/jobs-database.js';
import { InvalidJobOptionsError, JobContentionError } from '../errors/jobs.errors.js';
import { JobEventEmitter } from '../events/job-event-emitter.js';
import { TaskRegistry } from '../discovery/task-registry.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { channelFor, NEW_JOB_NOTIFICATION } from '../notify/notification-protocol.js';
import type { ResultOf, TaskDefinition, TaskResult } from '../discovery/task-definition.js';
import type { AddJobOptions, AddTaskJobOptions, AddedJob } from './add-job-options.interface.js';
import { checkPayloads } from './check-payloads.js';
import { enqueueError } from './enqueue-unreachable.js';
import { BulkOperations } from './bulk-operations.js';
import type { ChangedJob } from './bulk-operations.js';
import { CompletionWaiters } from './completion-waiters.js';
import type {
  CancelJobsFilter,
  DeleteJobsFilter,
  RetryJobsFilter,
} from './job-filter.interface.js';
import type { JobInfo } from './job-info.interface.js';
import { EventSender } from '../steps/event-sender.js';
import { stepsSql } from '../steps/steps.sql.js';
import { parseWaitingFor, stepInfo } from '../steps/step-views.js';
import type { StoredStep, StoredWaitingFor } from '../steps/step-views.js';
import { queueSql } from './job-queue.sql.js';
import type { QueueSql } from './job-queue.sql.js';
import { JobsTelemetry } from '../telemetry/jobs-telemetry.js';
import type { TraceCarrier } from '../telemetry/jobs-telemetry.js';
import { validateJob } from './validate-job.js';
import { QueueStateService } from '../queue-state/queue-state.service.js';
import type { QueueInfo } from '../queue-state/queue-info.interface.js';
import type { JobDefaults, ValidatedJob } from './validate-job.js';
import { JobWaiting } from './job-waiting.js';
import { untilSettled } from './until-settled.js';
import { assertJobId } from './validate-queue-calls.js';
import type { WaitForJobOptions } from './wait-for-job-options.interface.js';
import { JobFlows } from '../job-queue/job-flows.js';
import type { AddFlowOptions, AddedFlow, FlowInfo } from '../job-queue/flow-options.interface.js';

/** A job as `getJob`'s statement gives it. */
type StoredJob<Result> = Omit<JobInfo<Result>, 'steps' | 'waitingFor'> & {
  steps: StoredStep[];
  waitingFor: StoredWaitingFor;
};

/** How often an insert whose unique keys neither went in nor matched a pending job runs. */
const MAX_KEY_ROUNDS = 4;

/**
 * Enqueues jobs and reports on them. Inject it anywhere in the app.
 *
 * Unlike the seed's `addJob`, nothing here swallows an error: a bad argument throws a typed error
 * before anything is written, and a database error reaches the caller (from `addJob` and
 * `addJobs`, a lost or refused connection as `DatabaseUnreachableError`).
 *
 * @publicApi
 */
@Injectable()
export class JobQueueService {
  private readonly sql: QueueSql;
  private readonly channel: string;
  private readonly defaults: JobDefaults;
  private readonly bulk: BulkOperations;
  private readonly waiting: JobWaiting;
  private readonly flows: JobFlows;
  private readonly eventSender: EventSender;

  /** @internal Nest constructs it: its parameters are the module's internals. */
  constructor(
    @Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
    @Inject(TaskRegistry) private readonly registry: TaskRegistry,
    @Inject(CompletionWaiters) waiters: CompletionWaiters,
    @Inject(JobEventEmitter) private readonly events: JobEventEmitter,
    @Inject(JobsTelemetry) private readonly telemetry: JobsTelemetry,
    @Inject(QueueStateService) private readonly queues: QueueStateService,
  ) {
    this.sql = queueSql(db.schema);
    this.channel = channelFor(db.schema);
    this.waiting = new JobWaiting(db, this.sql, waiters, this.channel);
    this.bulk = new BulkOperations(options, db, this.sql, this.channel, events, (jobs) =>
      this.reportCancelled(jobs),
    );
    this.defaults = {
      taskMaxRetries: (task) => registry.get(task)?.options.maxRetries,
      taskQueue: (task) => registry.queueForNewJob(task),
      taskPayloadSchema: (task) => registry.get(task)?.options.payloadSchema,
      isKnownTask: (task) => registry.get(task) !== undefined,
      knownTasks: () => registry.names,
      allowUnknownTasks: options.allowUnknownTasks,
      maxRetries: options.maxRetries,
    };
    this.flows = new JobFlows({
      db,
      queueSql: this.sql,
      channel: this.channel,
      instanceId: options.instanceId,
      defaults: this.defaults,
      telemetry,
      events,
      reportCancelled: (jobs) => this.reportCancelled(jobs),
    });
    this.eventSender = new EventSender(
      db,
      stepsSql(db.schema),
      this.channel,
      options.maxResultBytes,
    );
  }

  /**
   * Sends the event `name` (with `payload`, plain JSON of at most `maxResultBytes`, or none) to the
   * tasks that wait for it (`ctx.waitForEvent(name)`): those suspended on it are due at once, on
   * any instance, and a wait that starts later, within `historyExpiration`, sees it too. The first
   * event of a name wins: resolves `true` if this was it, `false` if one of that name was sent
   * before (this one is then dropped). Throws `InvalidEventError` for a bad name or payload.
   */
  sendEvent(name: string, payload?: unknown): Promise<boolean> {
    return this.eventSender.send(name, payload);
  }

  /**
   * Adds one job. Throws a `JobsError` subclass on bad input; nothing is inserted then. `Result`
   * types what the job's `promise` resolves to: the return type of its task's `run`.
   *
   * With a task definition as `task` (`defineTask`), the payload is typed as its `payloadSchema`'s
   * input and checked against it before anything is written (`InvalidPayloadError` with the
   * schema's issues), and the `promise` resolves with its `resultSchema`'s output. A task name whose
   * handler on this instance has a `payloadSchema` is checked the same way.
   *
   * When the database cannot be reached (the connection refused, or lost during the call), throws
   * `DatabaseUnreachableError`, the original error as its `cause`: the one error to catch and retry
   * on. Its `mayHaveWritten` says whether the job may exist all the same (the connection was lost
   * after the insert was sent, which may have committed before the answer was lost); a `uniqueKey`
   * makes the retry safe then, while the first job is pending. Any other database error is thrown
   * unchanged.
   */
  addJob<Definition extends TaskDefinition>(
    options: AddTaskJobOptions<Definition> & { promise: true },
  ): Promise<AddedJob<TaskResult<Definition>> & { promise: Promise<TaskResult<Definition>> }>;
  addJob<Definition extends TaskDefinition>(
    options: AddTaskJobOptions<Definition>,
  ): Promise<AddedJob<TaskResult<Definition>>>;
  addJob<Result = unknown, Payload = unknown>(
    options: AddJobOptions<Payload>,
  ): Promise<AddedJob<Result>>;
  async addJob(options: AddJobOptions | AddTaskJobOptions<TaskDefinition>): Promise<AddedJob> {
    const [added] = await this.insert([options], options?.manager, options?.notify ?? true, false);
    return added;
  }

  /**
   * Adds a batch in one statement (and at most one notification). Every job is validated first:
   * one bad job throws and none is inserted (an `InvalidPayloadError` names its `index`).
   * `manager` and `notify` are taken from the first job. A job's `task` may be a task definition,
   * as in `addJob`. An unreachable database throws `DatabaseUnreachableError`, as in `addJob` (with
   * `mayHaveWritten`, jobs of the batch may have been written).
   */
  async addJobs<Definition extends TaskDefinition = never>(
    jobs: readonly (AddJobOptions | AddTaskJobOptions<Definition>)[],
  ): Promise<AddedJob[]> {
    if (!Array.isArray(jobs)) throw new InvalidJobOptionsError('(jobs)', jobs, 'must be an array');
    if (jobs.length === 0) return [];
    const managers = new Set(jobs.map((job) => job?.manager));
    if (managers.size > 1) {
      throw new InvalidJobOptionsError(
        'manager',
        '(several)',
        'must be the same for every job of a batch',
      );
    }
    return this.insert(
      jobs,
      jobs[0]?.manager,
      jobs.some((job) => job?.notify ?? true),
      true,
    );
  }

  /**
   * Adds a flow: jobs, some of which wait for others (`dependsOn`, by `ref`), in one statement —
   * all of them or, on any error, none. A job with dependencies is `blocked` and never claimed; it
   * becomes pending in the statement that writes the end of its last dependency (completed; failed
   * or interrupted with no retry left, or its task gave up; cancelled), and every instance is told
   * at once. A dependency that did not complete cancels its dependents, and theirs in turn, unless
   * a dependent's `onDependencyFailure` is `'run'`. A task reads its dependencies' results and
   * errors with `ctx.dependencies()`.
   *
   * Throws `InvalidFlowError` naming the job at fault (a duplicate or unknown ref, a cycle, a job's
   * bad option or payload: its `cause`) before anything is written; an unreachable database throws
   * `DatabaseUnreachableError`, as `addJob` does. With `manager`, the flow exists only if that
   * transaction commits.
   */
  addFlow(options: AddFlowOptions): Promise<AddedFlow> {
    return this.flows.addFlow(options);
  }

  /** A flow and the state of each of its jobs; `null` if there is none (or it has expired). */
  getFlow(flowId: string): Promise<FlowInfo | null> {
    return this.flows.getFlow(flowId);
  }

  /**
   * Cancels every job of a flow that has not ended, blocked, pending or running, as `cancelJob`
   * does. Returns how many it cancelled.
   */
  cancelFlow(flowId: string): Promise<number> {
    return this.flows.cancelFlow(flowId);
  }

  /**
   * Queues again every job of a flow that ended without completing (failed, interrupted or
   * cancelled), each blocked again until its dependencies queued again here have ended: the flow
   * runs on from where it stopped. A job that ran gets one more attempt, as `retryJobs` gives it;
   * one that never ran (cancelled while blocked) gets its retries. Returns how many it queued.
   */
  retryFlow(flowId: string): Promise<number> {
    return this.flows.retryFlow(flowId);
  }

  /**
   * A job by id, pending or ended; `null` if there is none. `Task` types its `result`: a task
   * definition (`getJob<typeof SendEmail>(id)`: its `resultSchema`'s output), or the result's type.
   */
  async getJob<Task = unknown>(id: string): Promise<JobInfo<ResultOf<Task>> | null> {
    assertJobId(id);
    const [found] = await this.db.query<StoredJob<ResultOf<Task>>>(
      this.sql.getJob,
      this.sql.getJob.values({ id }),
    );
    if (!found) return null;
    const row: JobInfo<ResultOf<Task>> = {
      ...found,
      steps: found.steps.map(stepInfo),
      waitingFor: parseWaitingFor(found.waitingFor),
    };
    if (!isQueuedState(row.state)) return row;
    return { ...row, queue: this.registry.pendingQueueOf(row.task, row.queue) };
  }

  /**
   * Waits for job `id` to end, wherever it was enqueued and wherever it runs, and even if it ended
   * already: resolves when it completes, and rejects as `addJob`'s `promise` does —
   * `JobFailedError` (failed or interrupted for good, or a cron job that missed its slot),
   * `JobCancelledError`, `JobPromiseTimeoutError` after `timeout` seconds (default
   * `promiseTimeout`), `JobsShutdownError` when this instance shuts down first — or with
   * `JobNotFoundError` when there is no such job. Any number of callers, on any instances, may wait
   * for one job.
   *
   * The job's end is then notified to every instance (as for a job added with `promise: true`), and
   * the poll (`pollingCheck`) is the backstop if that notification is lost.
   *
   * `Task` types the result: a task definition (`waitForJob<typeof SendEmail>(id)`: its
   * `resultSchema`'s output), or the result's type.
   */
  async waitForJob<Task = unknown>(
    id: string,
    options: WaitForJobOptions = {},
  ): Promise<ResultOf<Task>> {
    assertJobId(id);
    return this.waiting.waitForJob<ResultOf<Task>>(id, options);
  }

  /**
   * Cancels a job, queued or running, from any instance. A queued job leaves the queue; a running
   * one's attempt ends at once, recorded `cancelled`, with no retry, whatever its task then does, and
   * the instance running it aborts its `ctx.signal` (reason: a `JobCancelledError`) within a second
   * (a notification; its `pollingCheck`, or LISTEN's reconnection, if the notification is lost). Either way its history says
   * `cancelled` and promises awaiting it reject with `JobCancelledError`. Returns `false` when the
   * job has ended already, or does not exist.
   */
  async cancelJob(id: string): Promise<boolean> {
    assertJobId(id);
    return untilSettled(`cancelling job ${id}`, async () => {
      const [row] = await this.db.query<{
        queued: boolean;
        state: string | null;
        task: string | null;
        queue: string;
      }>(this.sql.cancelJob, this.sql.cancelJob.values({ id, channel: this.channel }));
      if (row.task !== null) {
        this.reportCancelled([{ id, task: row.task, queue: row.queue }]);
        return true;
      }
      // Seen queued or running, yet neither write found it there: it moved, so look again.
      return row.queued || row.state === 'active' ? undefined : false;
    });
  }

  /**
   * Cancels, as `cancelJob` does, every job that matches `filter` (`JobFilter`; `state`: `blocked`,
   * `pending`, `suspended`, `active`, all four by default) and was enqueued before the call. In
   * batches, each its own transaction.
   * Returns how many jobs it cancelled. Throws `InvalidJobFilterError` on a bad filter, before
   * anything is changed.
   */
  cancelJobs(filter: CancelJobsFilter = {}): Promise<number> {
    return this.bulk.cancelJobs(filter);
  }

  /**
   * Queues again, due now, every job that matches `filter` and has ended for good (`state`:
   * `failed`, `interrupted` or `cancelled`; by default `failed` and `interrupted`) — a job that
   * failed but will be retried anyway is pending, not failed, and is left alone. Each gets one more
   * attempt: its attempt counter goes on (attempt 4 after three attempts), and it gets no automatic
   * retries, as the dashboard's retry. In batches; returns how many jobs it queued. Throws
   * `InvalidJobFilterError` on a bad filter, before anything is changed.
   */
  retryJobs(filter: RetryJobsFilter = {}): Promise<number> {
    return this.bulk.retryJobs(filter);
  }

  /**
   * Deletes the records of every job that matches `filter` and had ended for good when the call
   * began (`state`: `completed`, `failed`, `interrupted`, `cancelled`, `skipped`; all five by
   * default): its history row, with its durable steps' checkpoints and its failed attempts, as
   * retention deletes them after `historyExpiration`. `getJob` then answers `null` for it.
   *
   * Left alone: a job whose retry is pending (it is queued, not ended: its failed attempt's record
   * stays with it), and a job of a flow (`addFlow`), whatever its state: a flow expires whole with
   * its flow, so that `getFlow` never shows a flow with jobs missing. To delete jobs that have not
   * ended, cancel them first (`cancelJobs`). In batches of 1000, each its own short transaction
   * that waits for no lock (a job another call holds, such as a retry queuing it again, is left);
   * returns how many jobs it deleted. Throws `InvalidJobFilterError` on a bad filter (a state of
   * a job that has not ended, too), before anything is changed.
   */
  deleteJobs(filter: DeleteJobsFilter = {}): Promise<number> {
    return this.bulk.deleteJobs(filter);
  }

  /**
   * @internal The dashboard's retry of one job that ended for good (failed, interrupted or
   * cancelled), as `retryJobs` retries it. `false` if it is in no such state.
   */
  retryJob(id: string): Promise<boolean> {
    assertJobId(id);
    return this.bulk.retryJob(id);
  }

  /**
   * Makes a pending job due now: one waiting for its `waitUntil`, a retry's backoff or a snooze.
   * Returns `false` when the job is not pending and waiting (already due, blocked in a flow,
   * suspended, running, ended, or unknown). The instances are woken, as by an enqueue.
   */
  async runJobNow(id: string): Promise<boolean> {
    assertJobId(id);
    const [{ due }] = await this.db.query<{ due: number }>(this.sql.runJobNow, [
      id,
      this.channel,
      NEW_JOB_NOTIFICATION,
    ]);
    return due > 0;
  }

  private reportCancelled(jobs: readonly ChangedJob[]): void {
    this.waiting.cancelled(jobs.map((job) => job.id));
    this.events.cancelled(jobs);
  }

  /**
   * Pauses a queue on every instance: none starts a job of it any more (within a notification's
   * delay, else within `pollingCheck`), running jobs finish, and enqueueing still works. The state
   * is stored: it outlives restarts. A queue unknown to this instance may be paused too.
   */
  pauseQueue(name: string): Promise<void> {
    return this.queues.setPaused(name, true);
  }

  /** Resumes a paused queue on every instance; its due jobs start at once. */
  resumeQueue(name: string): Promise<void> {
    return this.queues.setPaused(name, false);
  }

  /**
   * The queues this instance configures or runs tasks of, those stored paused or resumed, and
   * those holding jobs: state, counts across the cluster, and the limits configured here.
   */
  getQueues(): Promise<QueueInfo[]> {
    return this.queues.list();
  }

  private async insert(
    options: readonly (AddJobOptions | AddTaskJobOptions<TaskDefinition>)[],
    manager: SqlExecutor | undefined,
    notify: boolean,
    batch: boolean,
  ): Promise<AddedJob[]> {
    const jobs = options.map((job) => validateJob(job, this.defaults));
    // Only jobs whose task has a payloadSchema are checked; an asynchronous schema is awaited.
    const checking = checkPayloads(options, jobs, batch);
    if (checking) await checking;
    const waits = this.waiting.forEnqueue(jobs);
    try {
      const existing = this.telemetry.enabled
        ? await this.telemetry.send(jobs, (traceContext) =>
            this.insertRows(manager, jobs, notify, traceContext),
          )
        : await this.insertRows(manager, jobs, notify, null);
      this.events.added(jobs.filter((job) => !existing.has(job)));
      return jobs.map((job) => {
        const pendingId = existing.get(job);
        const added = { id: pendingId ?? job.id, deduplicated: pendingId !== undefined };
        const promise = waits.promiseOf(job, pendingId);
        return promise ? { ...added, promise } : added;
      });
    } catch (err) {
      waits.forget();
      throw enqueueError(err, jobs.length);
    }
  }

  /**
   * Inserts the jobs; returns, for each job whose unique key was already pending, that pending
   * job's id. A pending job found by key may start (and free its key) before we look it up, so the
   * jobs whose key neither inserted nor matched are tried again.
   */
  private async insertRows(
    manager: SqlExecutor | undefined,
    jobs: readonly ValidatedJob[],
    notify: boolean,
    traceContext: TraceCarrier | null,
  ): Promise<Map<ValidatedJob, string>> {
    const existing = new Map<ValidatedJob, string>();
    let remaining = jobs;
    for (let round = 0; remaining.length > 0; round++) {
      const keyed = remaining.some((job) => job.uniqueKey !== null);
      // One job's values go as scalars, a batch's as arrays.
      const statement =
        remaining.length === 1
          ? keyed
            ? this.sql.insertKeyedJob
            : this.sql.insertJob
          : keyed
            ? this.sql.insertKeyedJobs
            : this.sql.insertJobs;
      const [{ keyedIds }] = await this.db.queryIn<{ keyedIds: string[] }>(
        manager,
        statement,
        statement.values({
          jobs: remaining,
          createdBy: this.options.instanceId,
          notify,
          channel: this.channel,
          notification: NEW_JOB_NOTIFICATION,
          traceContext,
        }),
      );
      const keyedInserted = new Set(keyedIds);
      const conflicting = remaining.filter(
        (job) => job.uniqueKey !== null && !keyedInserted.has(job.id),
      );
      if (conflicting.length === 0) break;
      if (round + 1 >= MAX_KEY_ROUNDS) {
        throw new JobContentionError(
          `enqueueing ${conflicting.length} job(s)`,
          MAX_KEY_ROUNDS,
          'their unique keys kept changing hands',
        );
      }
      const pending = await this.db.queryIn<{ id: string; uniqueKey: string }>(
        manager,
        this.sql.pendingByUniqueKey,
        [conflicting.map((job) => job.uniqueKey)],
      );
      const byKey = new Map(pending.map((row) => [row.uniqueKey, row.id]));
      for (const job of conflicting) {
        const id = byKey.get(job.uniqueKey!);
        if (id) existing.set(job, id);
      }
      remaining = conflicting.filter((job) => !byKey.has(job.uniqueKey!));
    }
    return existing;
  }
}
