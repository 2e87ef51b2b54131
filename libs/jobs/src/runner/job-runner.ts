import { Inject, Injectable, Logger } from '@nestjs/common';
import { toError } from '../common/errors.js';
import { Tick } from '../common/tick.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { EndingNotRecordedError, JobCancelledError } from '../errors/jobs.errors.js';
import { TaskRegistry } from '../discovery/task-registry.js';
import { JobEventEmitter } from '../events/job-event-emitter.js';
import type { SkipReason } from '../events/job-event.interface.js';
import { NotificationListener } from '../notify/notification-listener.js';
import { channelFor } from '../notify/notification-protocol.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { CompletionWaiters } from '../job-queue/completion-waiters.js';
import { QueueStateService } from '../queue-state/queue-state.service.js';
import { JobsTelemetry } from '../telemetry/jobs-telemetry.js';
import { WorkerPool } from '../worker-pool/worker-pool.js';
import { AttemptEndingWriter } from './attempt-ending-writer.js';
import { AttemptProgress } from './attempt-progress.js';
import { QueueClaims } from './queue-claims.js';
import { runnerSql } from './runner.sql.js';
import type { ClaimedJob, ClaimRow } from './claim.sql.js';
import type { RunnerSql } from './runner.sql.js';
import { RunningAttempt, RunningAttempts } from './running-attempts.js';
import { ShutdownDrain } from './shutdown-drain.js';
import { DependencyReader } from '../job-queue/dependency-reader.js';
import { TaskExecutor } from './task-executor.js';

/**
 * Why the claim loop wakes: the one list of what makes this instance look for jobs to claim.
 * - `started`: the runner started;
 * - `newJob`: a `newJob` notification (an enqueue, a retry, a reaper's requeue, on any instance);
 * - `poll`: the polling tick, every `pollingCheck`: jobs that fell due, notifications lost;
 * - `listening`: `LISTEN` (re)connected: what was notified while it was down is lost;
 * - `queuesChanged`: a queue was paused or resumed: a resumed queue may have jobs due, and no
 *   notification says so;
 * - `rateWindow`: the window of a queue held back by its `rateLimit` moved on (a timer);
 * - `slotFreed`: a task settled, and its slot of `concurrency` is free again;
 * - `attemptDone`: an attempt is done here (its ending written, or not its to write), and no longer
 *   counts against the bound on attempts whose ending is still to be written;
 * - `asked`: `runUntilIdle` (the testing kit) saw due jobs.
 * `slotFreed` and `attemptDone` free capacity: they wake the loop only while it has a `backlog`.
 */
export type WakeReason =
  | 'started'
  | 'newJob'
  | 'poll'
  | 'listening'
  | 'queuesChanged'
  | 'rateWindow'
  | 'slotFreed'
  | 'attemptDone'
  | 'asked';

/**
 * Where the claim loop stands. Claiming is single-flight: one claim round at a time, sized to the
 * free capacity measured just before it, so that wake-ups arriving together cannot overrun
 * `concurrency` (the seed checked its count and then awaited, so concurrent wake-ups each claimed a
 * full batch).
 * - `off`: not started (it runs no jobs, has no task here, or the boot has not reached it);
 * - `idle`: no claim is due; the next wake-up schedules one;
 * - `scheduled`: a claim starts on the next turn of the event loop, once every attempt that ended
 *   in this one has given back its slot, so that one claim takes them all; for a `newJob`, which
 *   frees no slot, in a microtask instead: a job's start does not wait for the rest of the loop's
 *   turn, and the notifications of one read from the socket, dispatched before it runs, still
 *   share one claim;
 * - `claiming`: a round is in flight; a wake-up meanwhile is remembered and answered with another
 *   claim once the round has looked;
 * - `stopping`: `stop()` was called; no claim starts any more, the round in flight finishes.
 */
type ClaimLoopState = 'off' | 'idle' | 'scheduled' | 'claiming' | 'stopping';

/** What the log says of each reason the claim skips cron jobs for. */
const SKIP_EXPLANATIONS: Record<SkipReason, string> = {
  missed: 'not started within missedSlotGrace of their slot',
  overlap: "their schedule (overlap: 'skip') had a run active or a later slot due",
};

/**
 * Claims due jobs up to this instance's capacity and runs them: the orchestrator of an attempt's
 * life, from its claim through its task (`TaskExecutor`) to the write that ends it
 * (`AttemptEndingWriter`), and of the instance's shutdown (`ShutdownDrain`). Its claim loop is
 * woken for the reasons of `WakeReason`, through `wake` alone, and moves through the states of
 * `ClaimLoopState`; `claimWhileDue` is the one place that decides to claim, and how many.
 *
 * A claim that comes back full means more may be waiting: `backlog` is then set, and each attempt
 * that ends claims again, so a busy instance stays busy without waiting for notifications. So does
 * a queue held back by its limits (`QueueClaims`); one held back by its rate limit is also claimed
 * again when its window moves on, by a timer.
 *
 * A slot frees when its task settles, not when the ending is written, nor when the attempt times
 * out: an in-process task that ignores its aborted signal keeps running, and keeps its slot until it
 * settles, so that `concurrency` bounds what really runs; and the next claim runs while the previous
 * batch's completions are being written, instead of after. Attempts whose ending is still to be
 * written are bounded too, by twice `concurrency`: one batch being written and one waiting for that
 * write, so that a claim does not wait on a completion write (with a bound of one `concurrency` it
 * did: see "What made the hot path fast" in docs/performance.md), while a database slow to take the
 * writes still slows the claims down with it.
 */
@Injectable()
export class JobRunner {
  private readonly logger = new Logger('JobsRunner');
  private state: ClaimLoopState = 'off';
  /** The round in flight (`claiming`, or `stopping` until it finishes). */
  private claimInFlight?: Promise<void>;
  /** A wake-up arrived since the round in flight last looked: it looks again. */
  private wakeRequested = false;
  /**
   * The last claim left due jobs behind (it came back full, or a queue's limits held it back): a
   * slot that frees wakes the loop.
   */
  private backlog = false;
  /**
   * A claim failed: it may have committed and lost its reply, leaving jobs `active` under this
   * live instance that nothing here runs. Set until the next claim round has given them back.
   */
  private claimMayHaveOrphaned = false;
  /** The wake-up of a rate-limited queue whose window moves on, and when it is due. */
  private rateWake?: { timer: NodeJS.Timeout; at: number };
  private readonly running = new RunningAttempts();
  /** Tasks that have not settled, aborted ones included: what `concurrency` bounds. */
  private executing = 0;
  /** The drain the first `stop()` started, which every later one returns. */
  private stopped?: Promise<void>;
  private readonly sql: RunnerSql;
  private readonly poll: Tick;
  private readonly cancelPoll: Tick;
  private readonly tasks: TaskExecutor;
  private readonly endings: AttemptEndingWriter;
  private readonly progress: AttemptProgress;
  private readonly shutdown: ShutdownDrain;
  private readonly claims: QueueClaims;

  constructor(
    @Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
    @Inject(TaskRegistry) private readonly registry: TaskRegistry,
    @Inject(CompletionWaiters) waiters: CompletionWaiters,
    @Inject(WorkerPool) workerPool: WorkerPool,
    @Inject(JobEventEmitter) private readonly events: JobEventEmitter,
    @Inject(JobsTelemetry) private readonly telemetry: JobsTelemetry,
    @Inject(QueueStateService) queueState: QueueStateService,
    @Inject(NotificationListener) listener: NotificationListener,
  ) {
    this.sql = runnerSql(db.schema);
    this.claims = new QueueClaims(options, db, this.sql, registry, queueState);
    queueState.onChange(() => this.wake('queuesChanged'));
    const channel = channelFor(db.schema);
    this.progress = new AttemptProgress(options, db, this.sql, channel, events, this.logger);
    this.tasks = new TaskExecutor(
      options,
      db,
      registry,
      workerPool,
      (attempt, json) => this.progress.report(attempt, json),
      new DependencyReader(db),
      this.logger,
    );
    this.endings = new AttemptEndingWriter(
      options,
      db,
      this.sql,
      channel,
      waiters,
      events,
      this.logger,
    );
    this.shutdown = new ShutdownDrain(options, db, this.sql, this.running, this.logger);
    this.poll = new Tick(
      'Polling for due jobs',
      options.pollingCheck * 1000,
      () => this.wake('poll'),
      this.logger,
    );
    // A tick of its own: the poll's wake-ups must not wait on this query's round trip.
    this.cancelPoll = new Tick(
      'Polling for cancelled attempts',
      options.pollingCheck * 1000,
      () => this.abortCancelled(),
      this.logger,
    );
    listener.on('newJob', () => this.wake('newJob'));
    listener.on('cancelJob', ({ id, claim }) => this.cancel(id, claim));
    listener.on('progress', (notification) => this.progress.heard(notification));
    listener.onConnected(() => {
      this.wake('listening');
      void this.abortCancelled().catch(() => undefined);
    });
  }

  /** How many tasks this instance is running now. */
  get activeCount(): number {
    return this.executing;
  }

  start(): void {
    if (this.state !== 'off' || !this.options.runJobs) return;
    if (this.registry.names.length === 0) {
      this.logger.log('No @JobTask() handlers on this instance: it enqueues but runs no jobs.');
      return;
    }
    this.state = 'idle';
    this.poll.start();
    this.cancelPoll.start();
    this.wake('started');
  }

  /** The claim loop's one entry: asks for a claim, for `reason` (see `WakeReason`). */
  wake(reason: WakeReason): void {
    if (this.state === 'off' || this.state === 'stopping') return;
    // Freed capacity is worth a claim only when the last claim left due jobs behind.
    if ((reason === 'slotFreed' || reason === 'attemptDone') && !this.backlog) return;
    // A round in flight sees this before it ends, and claims again.
    this.wakeRequested = true;
    if (this.state === 'idle') this.schedule(reason === 'newJob' ? 'microtask' : 'nextTurn');
  }

  private schedule(when: 'microtask' | 'nextTurn'): void {
    this.state = 'scheduled';
    if (when === 'microtask') queueMicrotask(this.startScheduledClaim);
    else setImmediate(this.startScheduledClaim);
  }

  /** The claim a wake-up scheduled, unless the runner is stopping. */
  private readonly startScheduledClaim = () => {
    if (this.state !== 'scheduled') return;
    this.state = 'claiming';
    this.claimInFlight = this.claimWhileDue().finally(() => {
      this.claimInFlight = undefined;
      if (this.state !== 'claiming') return;
      this.state = 'idle';
      // Asked for between the round's last look and now.
      if (this.wakeRequested) this.schedule('nextTurn');
    });
  };

  /**
   * Aborts the attempt of claim `claim` of job `id` if it runs here, with a `JobCancelledError`: a cancel has
   * ended it in the database already (`cancelJob`), so the attempt writes no ending of its own,
   * whatever its task then does. An attempt whose outcome is known is past aborting: its write is
   * fenced out by the cancel's. A task that ignores its signal keeps its slot until it settles, as
   * on a timeout.
   */
  cancel(id: string, claim: string): void {
    const running = this.running.find(id, claim);
    if (!running || running.ended) return;
    running.cancelled = true;
    running.controller.abort(new JobCancelledError(id));
  }

  /**
   * Aborts the attempts running here that a cancel ended while its notification did not arrive
   * (LISTEN was down): every `pollingCheck`, and after every LISTEN (re)connection.
   */
  private async abortCancelled(): Promise<void> {
    const running = [...this.running.values()].filter((attempt) => !attempt.ended);
    if (running.length === 0) return;
    const { cancelledAttempts } = this.sql;
    const cancelled = await this.db.query<{ id: string; claim: string }>(
      cancelledAttempts,
      cancelledAttempts.values({ running }),
    );
    for (const { id, claim } of cancelled) this.cancel(id, claim);
  }

  /**
   * Stops claiming, lets running attempts finish for up to `shutdownTimeout`, then gives the rest
   * back to the queue with their attempt unconsumed and aborts their signals. Idempotent.
   */
  stop(): Promise<void> {
    this.stopped ??= this.drain();
    return this.stopped;
  }

  private async drain(): Promise<void> {
    this.state = 'stopping';
    await this.poll.stop();
    try {
      clearTimeout(this.rateWake?.timer);
      // Jobs that claim brings back are launched before it resolves, so they are drained too.
      await this.claimInFlight;
      // Cancels still reach the attempts that run on while the instance drains.
      await this.shutdown.drain();
    } finally {
      await this.cancelPoll.stop();
    }
  }

  /**
   * The one place that decides to claim, and how many: while this instance has free capacity and
   * more may be due (a wake-up arrived since the last look, or the last claim came back full), it
   * claims; with none free, it notes a backlog, and the next slot that frees wakes the loop.
   */
  private async claimWhileDue(): Promise<void> {
    // Claimed as many as it could: more may be due now, so the loop claims again at once (a queue
    // held back by its limits waits for an attempt to end instead).
    let full: boolean;
    try {
      do {
        this.wakeRequested = false;
        const free = this.freeCapacity();
        if (free <= 0) {
          this.backlog = true;
          return;
        }
        if (this.claimMayHaveOrphaned) await this.requeueOrphans();
        const round = await this.claims.claim(free, (jobs) => {
          const skipped = jobs.filter((job) => job.skipped);
          if (skipped.length > 0) this.reportSkipped(skipped);
          for (const job of jobs) if (!job.skipped) this.launch(job);
        });
        // Skipped jobs were taken out of the queue too: they count towards a full claim.
        full = round.full;
        this.backlog = round.full || round.heldBack;
        if (round.rateWakeMs !== undefined) this.wakeIn(round.rateWakeMs);
      } while ((this.wakeRequested || full) && this.state === 'claiming');
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
   * How many jobs this instance may claim now: its free slots of `concurrency`, and no more than
   * keeps the attempts whose ending is still to be written within their bound (see the class).
   */
  private freeCapacity(): number {
    const { concurrency } = this.options;
    const endingsBound = 2 * concurrency;
    return Math.min(concurrency - this.executing, concurrency + endingsBound - this.running.size);
  }

  /** Claims again in `ms`, unless a wake-up is already due sooner. */
  private wakeIn(ms: number): void {
    const at = Date.now() + ms;
    if (this.rateWake && this.rateWake.at <= at) return;
    clearTimeout(this.rateWake?.timer);
    const timer = setTimeout(() => {
      this.rateWake = undefined;
      this.wake('rateWindow');
    }, ms);
    this.rateWake = { timer, at };
  }

  /**
   * Gives back, unconsumed, the active attempts of this instance that it is not running. Only
   * inside the claim loop: claims are single-flight, so no claimed job is on its way to `launch`.
   */
  private async requeueOrphans(): Promise<void> {
    const { requeueOrphans } = this.sql;
    const { instanceId } = this.options;
    const requeued = await this.db.query(
      requeueOrphans,
      requeueOrphans.values({
        executedBy: instanceId,
        running: [...this.running.values()],
        reason: `A claim by instance ${instanceId} committed but its reply was lost; the job was requeued.`,
      }),
    );
    this.claimMayHaveOrphaned = false;
    if (requeued.length > 0) {
      this.logger.warn(`Requeued ${requeued.length} job(s) whose claim lost its reply.`);
    }
  }

  private reportSkipped(jobs: readonly ClaimRow[]): void {
    for (const job of jobs) this.events.skipped(job, job.skipReason ?? 'missed');
    for (const [reason, why] of Object.entries(SKIP_EXPLANATIONS)) {
      const skipped = jobs.filter((job) => (job.skipReason ?? 'missed') === reason);
      if (skipped.length === 0) continue;
      const tasks = [...new Set(skipped.map((job) => job.task))].join(', ');
      this.logger.warn(`Skipped ${skipped.length} cron job(s) of ${tasks}: ${why}.`);
    }
  }

  private launch(job: ClaimedJob): void {
    const attempt = new RunningAttempt(job);
    this.running.add(attempt);
    this.executing++;
    this.claims.started(job.queue);
    this.events.started(job);
    if (job.resumed) this.events.resumed(job);
    void this.execute(attempt).finally(() => {
      this.running.delete(attempt);
      this.wake('attemptDone');
    });
  }

  /** The task of `job` settled: its slot of `concurrency` is free again. */
  private freeSlot(job: ClaimedJob): void {
    this.executing--;
    this.claims.settled(job.queue);
    this.wake('slotFreed');
  }

  private async execute(attempt: RunningAttempt): Promise<void> {
    const { job } = attempt;
    const { ending, stray, transaction } = this.telemetry.enabled
      ? await this.telemetry.process(job, () => this.tasks.run(attempt))
      : await this.tasks.run(attempt);
    attempt.ended = true;
    if (stray) {
      const reason = ending.outcome === 'failed' ? ` (${ending.error.message})` : '';
      this.logger.warn(
        `Job ${job.id} (${job.task}, attempt ${job.attempt}) was aborted${reason} but its task ` +
          'ignores ctx.signal and is still running; it keeps its slot of concurrency until it settles.',
      );
    }
    // At once when nothing strays: not through a resolved promise, a promise and a turn per job.
    if (stray) void stray.then(() => this.freeSlot(job));
    else this.freeSlot(job);
    if (attempt.released || attempt.cancelled) {
      this.progress.discard(attempt);
      await transaction?.rollback();
      if (attempt.cancelled) {
        this.logger.log(
          `Job ${job.id} (${job.task}, attempt ${job.attempt}) was cancelled while running.`,
        );
      }
      return;
    }
    try {
      if (attempt.progress) await this.progress.flush(attempt, transaction);
      await this.endings.record(attempt, ending, transaction);
    } catch (err) {
      // Nothing of the ending could be written (the database unreachable until shutdown released
      // the attempt, or it refused even a failure): the history row still says active, which is
      // what the reaper looks for.
      if (err instanceof EndingNotRecordedError) this.logger.error(err.message);
      else {
        this.logger.warn(
          `Could not record the end of job ${job.id} (${job.task}): ${toError(err).message}`,
        );
      }
    }
  }
}
