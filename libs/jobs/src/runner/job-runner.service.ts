import { Inject, Injectable, Logger } from '@nestjs/common';
import { toError } from '../common/errors.js';
import { Tick } from '../common/tick.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { TaskRegistry } from '../discovery/task-registry.js';
import { JobsShutdownError } from '../errors/jobs.errors.js';
import { JobEvents } from '../events/job-events.js';
import { channelFor } from '../notify/job-events.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { CompletionWaiters } from '../queue/completion-waiters.js';
import { WorkerPool } from '../worker-pool/worker-pool.service.js';
import { AttemptAbortController } from './attempt-abort-controller.js';
import { CompletionBatcher } from './completion-batcher.js';
import { retryWhileUnreachable } from './retry-while-unreachable.js';
import { runWithTimeout } from './run-with-timeout.js';
import { runnerSql } from './runner.sql.js';
import type { ClaimedJob, ClaimRow, RunnerSql } from './runner.sql.js';

/** How long shutdown keeps trying to give unfinished attempts back to an unreachable database. */
const RELEASE_RETRY_MS = 5_000;

interface RunningAttempt {
  readonly job: ClaimedJob;
  readonly controller: AttemptAbortController;
  /** Set when shutdown gave the attempt back: its own ending is then no longer ours to write. */
  released: boolean;
  /** The task has settled; only the write of its ending is left. */
  taskDone: boolean;
}

/**
 * Claims due jobs up to this instance's capacity and runs them.
 *
 * Claiming is single-flight: one claim at a time, sized to the free capacity measured just before
 * it, so notifications arriving together cannot overrun `concurrency` (the seed checked its count
 * and then awaited, so concurrent wake-ups each claimed a full batch). A wake-up that arrives while
 * a claim is in flight is remembered and answered with another claim once it returns.
 *
 * A claim that comes back full means more may be waiting: `backlog` is then set, and each attempt
 * that ends claims again, so a busy instance stays busy without waiting for notifications.
 *
 * A slot frees when its task settles, not when the ending is written: the next claim then runs
 * while the previous batch's completions are being written, instead of after. Attempts whose
 * ending is still to be written are bounded too, by twice `concurrency`: one batch being written
 * and one waiting for that write, so that a claim does not wait on a completion write (measured:
 * a bound of one `concurrency` cost a fifth of the drain's throughput), while a database slow to
 * take the writes still slows the claims down with it.
 */
@Injectable()
export class JobRunner {
  private readonly logger = new Logger('JobsRunner');
  private readonly running = new Map<string, RunningAttempt>();
  /** Attempts whose task has not settled: what `concurrency` bounds. */
  private executing = 0;
  private readonly sql: RunnerSql;
  private readonly channel: string;
  private readonly poll: Tick;
  private readonly completions: CompletionBatcher;
  private claimInFlight?: Promise<void>;
  private claimScheduled = false;
  private wakeRequested = false;
  private backlog = false;
  private started = false;
  private stopping?: Promise<void>;
  private idle?: () => void;

  constructor(
    @Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
    @Inject(TaskRegistry) private readonly registry: TaskRegistry,
    @Inject(CompletionWaiters) private readonly waiters: CompletionWaiters,
    @Inject(WorkerPool) private readonly workerPool: WorkerPool,
    @Inject(JobEvents) private readonly events: JobEvents,
  ) {
    this.sql = runnerSql(db.schema);
    this.channel = channelFor(db.schema);
    this.completions = new CompletionBatcher(db, this.sql.complete, this.channel);
    this.poll = new Tick(
      'Polling for due jobs',
      options.pollingCheck * 1000,
      () => this.wake(),
      this.logger,
    );
  }

  /** How many tasks this instance is running now. */
  get activeCount(): number {
    return this.executing;
  }

  start(): void {
    if (this.started || !this.options.runJobs) return;
    if (this.registry.names.length === 0) {
      this.logger.log('No @JobTask() handlers on this instance: it enqueues but runs no jobs.');
      return;
    }
    this.started = true;
    this.poll.start();
    this.wake();
  }

  /**
   * Asks for a claim: on a notification, a poll, or when capacity frees up with a backlog. The
   * claim starts on the next turn of the event loop, once every attempt that ended in this one
   * has given back its slot, so that one claim takes them all.
   */
  wake(): void {
    if (!this.started || this.stopping) return;
    // A claim in flight sees this when it returns, and claims again.
    this.wakeRequested = true;
    if (this.claimInFlight || this.claimScheduled) return;
    this.claimScheduled = true;
    setImmediate(() => {
      this.claimScheduled = false;
      if (this.stopping || this.claimInFlight) return;
      this.claimInFlight = this.claimWhileCapacity().finally(() => {
        this.claimInFlight = undefined;
        // Asked for between the claim's last look and now.
        if (this.wakeRequested) this.wake();
      });
    });
  }

  /**
   * Stops claiming, lets running attempts finish for up to `shutdownTimeout`, then gives the rest
   * back to the queue with their attempt unconsumed and aborts their signals. Idempotent.
   */
  stop(): Promise<void> {
    this.stopping ??= this.drain();
    return this.stopping;
  }

  private async claimWhileCapacity(): Promise<void> {
    try {
      do {
        this.wakeRequested = false;
        const { concurrency } = this.options;
        const endingsBound = 2 * concurrency;
        const free = Math.min(
          concurrency - this.executing,
          concurrency + endingsBound - this.running.size,
        );
        if (free <= 0) {
          this.backlog = true;
          return;
        }
        const jobs = await this.db.query<ClaimRow>(this.sql.claim, [
          free,
          this.options.instanceId,
          this.registry.names,
        ]);
        // Skipped jobs were taken out of the queue too: they count towards a full claim.
        this.backlog = jobs.length === free;
        const skipped = jobs.filter((job) => job.skipped);
        if (skipped.length > 0) this.reportSkipped(skipped);
        for (const job of jobs) if (!job.skipped) this.launch(job);
      } while ((this.wakeRequested || this.backlog) && !this.stopping);
    } catch (err) {
      // Nothing was claimed: the statement rolled back, so the jobs are still queued. The poll
      // retries, rather than every wake-up hammering a database that is down.
      this.wakeRequested = false;
      this.logger.warn(`Claiming jobs failed: ${toError(err).message}`);
    }
  }

  private reportSkipped(jobs: readonly ClaimRow[]): void {
    for (const job of jobs) this.events.skipped(job);
    const tasks = [...new Set(jobs.map((job) => job.task))].join(', ');
    this.logger.warn(
      `Skipped ${jobs.length} cron job(s) of ${tasks}: not started within missedSlotGrace of their slot.`,
    );
  }

  private launch(job: ClaimedJob): void {
    const attempt: RunningAttempt = {
      job,
      controller: new AttemptAbortController(),
      released: false,
      taskDone: false,
    };
    this.running.set(job.id, attempt);
    this.executing++;
    this.events.started(job);
    void this.execute(attempt).finally(() => {
      this.running.delete(job.id);
      if (this.running.size === 0) this.idle?.();
      if (this.backlog) this.wake();
    });
  }

  private async execute(attempt: RunningAttempt): Promise<void> {
    const { job, controller } = attempt;
    const task = this.registry.get(job.task);
    let failure: Error | undefined;
    try {
      if (!task)
        throw new Error(
          `No handler for task "${job.task}" on instance ${this.options.instanceId}.`,
        );
      const timeout = task.options.timeout ?? this.options.taskTimeout;
      const { handler } = task;
      // A worker task's handler lives in the pool threads, not in this one.
      if (!handler) await this.workerPool.run(job, timeout, controller);
      else
        await runWithTimeout(
          () =>
            handler.run(job.payload, {
              id: job.id,
              task: job.task,
              attempt: job.attempt,
              maxRetries: job.maxRetries,
              get signal() {
                return controller.signal;
              },
            }),
          timeout,
          controller,
        );
    } catch (err) {
      failure = toError(err);
    }
    attempt.taskDone = true;
    this.executing--;
    if (this.backlog) this.wake();
    if (attempt.released) return;
    try {
      if (failure) await this.recordFailure(job, failure);
      else await this.recordSuccess(job);
    } catch (err) {
      // The database refused to hear how the attempt went; the history row still says active,
      // which is what the reaper looks for.
      this.logger.warn(
        `Could not record the end of job ${job.id} (${job.task}): ${toError(err).message}`,
      );
    }
  }

  private async recordSuccess(job: ClaimedJob): Promise<void> {
    const { value: recorded, retried } = await this.writeEnding(job, 'the completion', () =>
      this.completions.complete(job),
    );
    if (!recorded) return this.reportFenced(job, 'completed', retried);
    this.events.completed(job);
    this.waiters.settle({ id: job.id, state: 'completed' });
  }

  private async recordFailure(job: ClaimedJob, failure: Error): Promise<void> {
    const { value: rows, retried: writeRetried } = await this.writeEnding(job, 'the failure', () =>
      this.db.query<{ retried: boolean }>(this.sql.fail, [
        job.id,
        this.channel,
        job.attempt,
        failure.message,
        this.options.retryBackoff,
        this.options.instanceId,
      ]),
    );
    if (rows.length === 0) return this.reportFenced(job, 'failed', writeRetried);
    const retried = rows[0].retried;
    this.events.failed(job, failure, retried);
    this.logger.warn(
      `Job ${job.id} (${job.task}) failed on attempt ${job.attempt}: ${failure.message}` +
        (retried ? '; retrying.' : '; no retries left.'),
    );
    if (!retried) this.waiters.settle({ id: job.id, state: 'failed', error: failure.message });
  }

  /**
   * An attempt's ending is written for as long as the database stays unreachable: the result is
   * kept if the database comes back before a reaper presumed this instance dead (the write is
   * fenced either way). Shutdown releasing the attempt ends the retries.
   */
  private writeEnding<T>(job: ClaimedJob, what: string, write: () => Promise<T>) {
    return retryWhileUnreachable(
      `${what} of job ${job.id} (${job.task}, attempt ${job.attempt})`,
      write,
      () => this.running.get(job.id)?.released ?? true,
      this.logger,
    );
  }

  private reportFenced(job: ClaimedJob, outcome: string, retried = false): void {
    this.logger.warn(
      `Job ${job.id} (${job.task}) ${outcome} on attempt ${job.attempt}, but that attempt is no longer the ` +
        'active one (it was reaped or released); the result is dropped.' +
        (retried ? ' (An earlier try lost its connection and may have recorded it.)' : ''),
    );
  }

  private async drain(): Promise<void> {
    await this.poll.stop();
    // Jobs that claim brings back are launched before it resolves, so they are drained too.
    await this.claimInFlight;
    if (this.running.size > 0) {
      this.logger.log(
        `Waiting up to ${this.options.shutdownTimeout}s for ${this.running.size} running job(s).`,
      );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.options.shutdownTimeout * 1000);
        this.idle = () => {
          clearTimeout(timer);
          resolve();
        };
        if (this.running.size === 0) this.idle();
      });
    }
    // Attempts whose task has settled are writing their own ending: theirs is the result to keep.
    const unfinished = [...this.running.values()].filter((attempt) => !attempt.taskDone);
    if (unfinished.length === 0) return;
    for (const attempt of unfinished) {
      attempt.released = true;
      attempt.controller.abort(new JobsShutdownError());
    }
    // Bounded: if the database stays away, the attempts stay active and peers reap them once this
    // instance's heartbeat is older than instanceTimeout.
    const releaseDeadline = Date.now() + RELEASE_RETRY_MS;
    try {
      const { value: requeued } = await retryWhileUnreachable(
        `the release of ${unfinished.length} unfinished job(s)`,
        () =>
          this.db.query(this.sql.release, [
            unfinished.map((attempt) => attempt.job.id),
            unfinished.map((attempt) => attempt.job.attempt),
            this.options.instanceId,
            `Instance ${this.options.instanceId} shut down before the attempt finished; the job was requeued.`,
          ]),
        () => Date.now() > releaseDeadline,
        this.logger,
      );
      this.logger.warn(`Requeued ${requeued.length} job(s) still running at shutdown.`);
    } catch (err) {
      this.logger.warn(
        `Could not requeue ${unfinished.length} job(s) still running at shutdown (${toError(err).message}); ` +
          'they stay active until a peer reaps them, instanceTimeout after this instance is last heard of.',
      );
    }
  }
}
