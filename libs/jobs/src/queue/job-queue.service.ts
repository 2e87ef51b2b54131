import { JOB_ID_PATTERN } from '../common/names.js';
import { Inject, Injectable } from '@nestjs/common';
import { JobsDatabase } from '../database/jobs-database.js';
import type { SqlExecutor } from '../database/jobs-database.js';
import { InvalidJobOptionsError } from '../errors/jobs.errors.js';
import { LifecycleEmitter } from '../events/lifecycle-emitter.js';
import { TaskRegistry } from '../discovery/task-registry.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { channelFor, NEW_JOB_NOTIFICATION } from '../notify/notification-protocol.js';
import type { AddJobOptions, AddedJob } from './add-job-options.interface.js';
import { CompletionWaiters } from './completion-waiters.js';
import type { JobInfo } from './job-info.interface.js';
import { queueSql } from './queue.sql.js';
import type { QueueSql } from './queue.sql.js';
import { validateJob } from './validate-job.js';
import { QueueStateService } from '../queues/queue-state.service.js';
import type { QueueInfo } from '../queues/queue-info.interface.js';
import type { JobDefaults, ValidatedJob } from './validate-job.js';

/**
 * Enqueues jobs and reports on them. Inject it anywhere in the app.
 *
 * Unlike the seed's `addJob`, nothing here swallows an error: a bad argument throws a typed error
 * before anything is written, and a database error reaches the caller.
 *
 * @publicApi
 */
@Injectable()
export class JobQueueService {
  private readonly sql: QueueSql;
  private readonly channel: string;
  private readonly defaults: JobDefaults;

  /** @internal Nest constructs it: its parameters are the module's internals. */
  constructor(
    @Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
    @Inject(TaskRegistry) private readonly registry: TaskRegistry,
    @Inject(CompletionWaiters) private readonly waiters: CompletionWaiters,
    @Inject(LifecycleEmitter) private readonly events: LifecycleEmitter,
    @Inject(QueueStateService) private readonly queues: QueueStateService,
  ) {
    this.sql = queueSql(db.schema);
    this.channel = channelFor(db.schema);
    this.defaults = {
      taskMaxRetries: (task) => registry.get(task)?.options.maxRetries,
      taskQueue: (task) => registry.queueOf(task),
      isKnownTask: (task) => registry.get(task) !== undefined,
      knownTasks: () => registry.names,
      allowUnknownTasks: options.allowUnknownTasks,
      maxRetries: options.maxRetries,
    };
  }

  /** Adds one job. Throws a `JobsError` subclass on bad input; nothing is inserted then. */
  async addJob<Payload = unknown>(options: AddJobOptions<Payload>): Promise<AddedJob> {
    const [added] = await this.insert([options], options?.manager, options?.notify ?? true);
    return added;
  }

  /**
   * Adds a batch in one statement (and at most one notification). Every job is validated first:
   * one bad job throws and none is inserted. `manager` and `notify` are taken from the first job.
   */
  async addJobs(jobs: readonly AddJobOptions[]): Promise<AddedJob[]> {
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
    );
  }

  /** A job by id, pending or ended; `null` if there is none. */
  async getJob(id: string): Promise<JobInfo | null> {
    assertJobId(id);
    const [row] = await this.db.query<JobInfo>(this.sql.getJob, [id]);
    if (row?.state !== 'pending') return row ?? null;
    return { ...row, queue: this.registry.pendingQueueOf(row.task, row.queue) };
  }

  /**
   * Cancels a pending job: it leaves the queue and its history says `cancelled`. Returns `false`
   * when the job is not pending (unknown, running or ended): a running job is not interrupted.
   */
  async cancelJob(id: string): Promise<boolean> {
    assertJobId(id);
    const rows = await this.db.query<{ id: string; task: string; queue: string }>(
      this.sql.cancelJob,
      [id, this.channel],
    );
    if (rows.length === 0) return false;
    this.waiters.settle({ id, state: 'cancelled' });
    this.events.cancelled(rows[0]);
    return true;
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
    options: readonly AddJobOptions[],
    manager: SqlExecutor | undefined,
    notify: boolean,
  ): Promise<AddedJob[]> {
    const jobs = options.map((job) => validateJob(job, this.defaults));
    // Registered before the insert: the job may end before the insert's reply reaches us.
    const waits = new Map(
      jobs.filter((job) => job.awaited).map((job) => [job, this.waiters.wait(job.id)]),
    );
    try {
      const existing = await this.insertRows(manager, jobs, notify);
      this.events.added(jobs.filter((job) => !existing.has(job)));
      return jobs.map((job) => {
        const pendingId = existing.get(job);
        if (pendingId === undefined) {
          const promise = waits.get(job)?.promise;
          return promise
            ? { id: job.id, deduplicated: false, promise }
            : { id: job.id, deduplicated: false };
        }
        // The job was never inserted: its caller waits for the pending job it was folded into.
        waits.get(job)?.forget();
        return job.awaited
          ? { id: pendingId, deduplicated: true, promise: this.waiters.wait(pendingId).promise }
          : { id: pendingId, deduplicated: true };
      });
    } catch (err) {
      for (const wait of waits.values()) wait.forget();
      throw err;
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
  ): Promise<Map<ValidatedJob, string>> {
    const existing = new Map<ValidatedJob, string>();
    let remaining = jobs;
    for (let round = 0; remaining.length > 0; round++) {
      const keyed = remaining.some((job) => job.uniqueKey !== null);
      const [{ keyedIds }] = await this.db.queryIn<{ keyedIds: string[] }>(
        manager,
        keyed ? this.sql.insertKeyedJobs : this.sql.insertJobs,
        [
          remaining.map((job) => job.id),
          sharedOrEach(remaining, (job) => job.task),
          remaining.map((job) => job.payload),
          sharedOrEach(remaining, (job) => job.priority),
          remaining.map((job) => job.waitUntil),
          sharedOrEach(remaining, (job) => job.maxRetries),
          sharedOrEach(remaining, (job) => job.isScheduled),
          remaining.map((job) => job.uniqueKey),
          sharedOrEach(remaining, (job) => job.awaited),
          this.options.instanceId,
          notify,
          this.channel,
          NEW_JOB_NOTIFICATION,
          sharedOrEach(remaining, (job) => job.queue),
          remaining.map((job) => job.groupKey),
        ],
      );
      const keyedInserted = new Set(keyedIds);
      const conflicting = remaining.filter(
        (job) => job.uniqueKey !== null && !keyedInserted.has(job.id),
      );
      if (conflicting.length === 0) break;
      if (round >= 3) {
        throw new Error(
          `Could not enqueue ${conflicting.length} job(s): their unique keys kept changing hands.`,
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

/**
 * A NOT NULL column of a batch: its one value when every job shares it, else one per job. Most
 * batches are of one task with the same options, and five one-element arrays cost the database
 * (and the pg driver) far less to parse than five arrays of the batch's size.
 */
function sharedOrEach<T>(jobs: readonly ValidatedJob[], value: (job: ValidatedJob) => T): T[] {
  const first = value(jobs[0]);
  return jobs.every((job) => value(job) === first) ? [first] : jobs.map(value);
}

function assertJobId(id: unknown): void {
  if (typeof id !== 'string' || !JOB_ID_PATTERN.test(id)) {
    throw new InvalidJobOptionsError('id', id, 'must be a job id (a UUID)');
  }
}
