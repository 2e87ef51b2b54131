import { Inject, Injectable, Logger } from '@nestjs/common';
import { toError } from '../common/errors.js';
import { Tick } from '../common/tick.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { TaskRegistry } from '../discovery/task-registry.js';
import { JobsShutdownError } from '../errors/jobs.errors.js';
import { LifecycleEmitter } from '../events/lifecycle-emitter.js';
import { channelFor } from '../notify/notification-protocol.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { CompletionWaiters } from '../queue/completion-waiters.js';
import { WorkerPool } from '../worker-pool/worker-pool.service.js';
import { AttemptAbortController } from '../attempt/attempt-abort-controller.js';
import { CompletionBatcher } from './completion-batcher.js';
import { retryWhileUnreachable } from './retry-while-unreachable.js';
import { runWithTimeout } from '../attempt/run-with-timeout.js';
import { runnerSql } from './runner.sql.js';
import type { ClaimedJob, ClaimRow, RunnerSql } from './runner.sql.js';

/** How long shutdown keeps trying to give unfinished attempts back to an unreachable database. */
const RELEASE_RETRY_MS = 5_000;

interface RunningAttempt {
  readonly job: ClaimedJob;
  readonly controller: AttemptAbortController;
  /** Set when shutdown gave the attempt back: its own ending is then no longer ours to write. */
  released: boolean;
  /** The attempt's outcome is known (its task settled, or it was aborted): only its write is left. */
  ended: boolean;
}

/** What running one attempt's task came to. */
interface TaskOutcome {
  readonly failure?: Error;
  /**
   * An in-process task that was aborted (timeout, shutdown) and has not settled: it cannot be
   * stopped, so it keeps its slot until it does.
   */
  readonly stray?: Promise<void>;
}

/**
 * Attempts are known by job and attempt, never by job alone: after a reaper requeued a job whose
 * attempt is still running here, this instance may claim the next attempt while the old one ends.
 */
function attemptKey(job: ClaimedJob): string {
  return `${job.id}:${job.attempt}`;
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
 * A slot frees when its task settles, not when the ending is written, nor when the attempt times
 * out: an in-process task that ignores its aborted signal keeps running, and keeps its slot until it
 * settles, so that `concurrency` bounds what really runs. A slot frees when its task settles: the next claim then runs
 * while the previous batch's completions are being written, instead of after. Attempts whose
 * ending is still to be written are bounded too, by twice `concurrency`: one batch being written
 * and one waiting for that write, so that a claim does not wait on a completion write (measured:
 * a bound of one `concurrency` cost a fifth of the drain's throughput), while a database slow to
 * take the writes still slows the claims down with it.
 */
@Injectable()
export class JobRunner {
  private readonly logger = new Logger('JobsRunner');
  /** Attempts whose ending is not written yet, by `attemptKey`. */
  private readonly running = new Map<string, RunningAttempt>();
  /** Tasks that have not settled, aborted ones included: what `concurrency` bounds. */
  private executing = 0;
  /**
   * A claim failed: it may have committed and lost its reply, leaving jobs `active` under this
   * live instance that nothing here runs. Set until the next claim round has given them back.
   */
  private claimMayHaveOrphaned = false;
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
    @Inject(LifecycleEmitter) private readonly events: LifecycleEmitter,
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
        if (this.claimMayHaveOrphaned) await this.requeueOrphans();
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
      // Usually nothing was claimed: the statement rolled back and the jobs are still queued. But
      // a reply lost after the commit leaves claimed jobs active here; the next round (the poll's,
      // rather than every wake-up hammering a database that is down) gives them back first.
      this.wakeRequested = false;
      this.claimMayHaveOrphaned = true;
      this.logger.warn(`Claiming jobs failed: ${toError(err).message}`);
    }
  }

  /**
   * Gives back, unconsumed, the active attempts of this instance that it is not running. Only
   * inside the claim loop: claims are single-flight, so no claimed job is on its way to `launch`.
   */
  private async requeueOrphans(): Promise<void> {
    const running = [...this.running.values()].map((attempt) => attempt.job);
    const requeued = await this.db.query(this.sql.requeueOrphans, [
      this.options.instanceId,
      running.map((job) => job.id),
      running.map((job) => job.attempt),
      `A claim by instance ${this.options.instanceId} committed but its reply was lost; the job was requeued.`,
    ]);
    this.claimMayHaveOrphaned = false;
    if (requeued.length > 0) {
      this.logger.warn(`Requeued ${requeued.length} job(s) whose claim lost its reply.`);
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
      ended: false,
    };
    const key = attemptKey(job);
    this.running.set(key, attempt);
    this.executing++;
    this.events.started(job);
    void this.execute(attempt).finally(() => {
      this.running.delete(key);
      if (this.running.size === 0) this.idle?.();
      if (this.backlog) this.wake();
    });
  }

  private async execute(attempt: RunningAttempt): Promise<void> {
    const { job } = attempt;
    const { failure, stray } = await this.runTask(attempt);
    attempt.ended = true;
    if (stray) {
      this.logger.warn(
        `Job ${job.id} (${job.task}, attempt ${job.attempt}) was aborted (${failure?.message}) but its task ` +
          'ignores ctx.signal and is still running; it keeps its slot of concurrency until it settles.',
      );
    }
    void (stray ?? Promise.resolve()).then(() => {
      this.executing--;
      if (this.backlog) this.wake();
    });
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

  private async runTask({ job, controller }: RunningAttempt): Promise<TaskOutcome> {
    const task = this.registry.get(job.task);
    if (!task) {
      return {
        failure: new Error(
          `No handler for task "${job.task}" on instance ${this.options.instanceId}.`,
        ),
      };
    }
    const timeout = task.options.timeout ?? this.options.taskTimeout;
    const { handler } = task;
    try {
      // A worker task's handler lives in the pool threads, which stop a thread that does not answer.
      if (!handler) await this.workerPool.run(job, timeout, controller);
      else {
        let settled = false;
        // Through a promise, so that a task that throws synchronously rejects like one that rejects.
        const running = Promise.resolve()
          .then(() =>
            handler.run(job.payload, {
              id: job.id,
              task: job.task,
              attempt: job.attempt,
              maxRetries: job.maxRetries,
              get signal() {
                return controller.signal;
              },
            }),
          )
          .finally(() => (settled = true));
        try {
          await runWithTimeout(running, timeout, controller);
        } catch (err) {
          const stray = settled ? undefined : running.then(noop, noop);
          return { failure: toError(err), stray };
        }
      }
      return {};
    } catch (err) {
      return { failure: toError(err) };
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
        this.options.maxRetryDelay,
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
      () => this.running.get(attemptKey(job))?.released ?? true,
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
    // Attempts whose outcome is known are writing their own ending: theirs is the result to keep.
    const unfinished = [...this.running.values()].filter((attempt) => !attempt.ended);
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

function noop(): void {}
