import type { Logger } from '@nestjs/common';
import type { AttemptEnding } from '../attempt/attempt-ending.js';
import { toError } from '../common/errors.js';
import { storableText, truncateUtf8 } from '../common/storable-text.js';
import { isConnectionError } from '../database/connection-errors.js';
import type { JobsDatabase } from '../database/jobs-database.js';
import { EndingNotRecordedError } from '../errors/jobs.errors.js';
import { endNotification } from '../notify/notification-protocol.js';
import type { JobEventEmitter } from '../events/job-event-emitter.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import type { CompletionWaiters } from '../job-queue/completion-waiters.js';
import { CompletionBatcher } from './completion-batcher.js';
import { completionStatement } from './ending.sql.js';
import { retryWhileUnreachable } from './retry-while-unreachable.js';
import type { RunnerSql } from './runner.sql.js';
import type { RunningAttempt } from './running-attempts.js';
import type { TaskTransaction } from './task-transaction.js';
import { parseWaitingFor } from '../steps/step-views.js';
import { stepsSql } from '../steps/steps.sql.js';
import type { StepsSql } from '../steps/steps.sql.js';

/**
 * The most of a failed attempt's stack kept (`jobAttempt`), in UTF-8 bytes: the frames that say
 * where, not a deep async chain's every one.
 */
const MAX_STACK_BYTES = 8192;

type Completed = Extract<AttemptEnding, { outcome: 'completed' }>;
type Snoozed = Extract<AttemptEnding, { outcome: 'snoozed' }>;
type Failed = Extract<AttemptEnding, { outcome: 'failed' }>;
type Suspended = Extract<AttemptEnding, { outcome: 'suspended' }>;

/**
 * The writes that end an attempt whose task settled: completed with its result (batched with the
 * other completions of the moment), snoozed (queued again, the attempt unconsumed), suspended (a
 * durable step's sleep or wait: queued again as a snooze is, with what it waits for) or failed (and
 * requeued while retries remain and the task did not give up). Each is fenced by the attempt: a
 * write for an attempt that was reaped or released meanwhile changes nothing and is reported. Only
 * a write that took tells the job's events and whoever awaits the job.
 *
 * A `transactional` task's completion or snooze is written in its transaction, which commits only
 * if the write took: a fenced write rolls the task's own writes back with it.
 *
 * No write error leaves a job `active` under a live instance: an ending PostgreSQL refuses (not a
 * lost connection, which is retried) is recorded as a failure saying why, and a failure it refuses
 * is recorded without the task's message; only if that is refused too does the attempt stay
 * active (`EndingNotRecordedError`), for the reaper.
 */
export class AttemptEndingWriter {
  private readonly completions: CompletionBatcher;

  constructor(
    private readonly options: ResolvedJobsOptions,
    private readonly db: JobsDatabase,
    private readonly sql: RunnerSql,
    private readonly channel: string,
    private readonly waiters: CompletionWaiters,
    private readonly events: JobEventEmitter,
    private readonly logger: Logger,
  ) {
    this.completions = new CompletionBatcher(db, sql, channel);
    this.steps = stepsSql(db.schema);
  }

  private readonly steps: StepsSql;

  /**
   * Writes `ending`, in `transaction` when the task had one (never a failed ending's). Throws
   * `EndingNotRecordedError` when nothing of it could be recorded, or the connection error that
   * outlived the attempt (released at shutdown).
   */
  async record(
    attempt: RunningAttempt,
    ending: AttemptEnding,
    transaction?: TaskTransaction,
  ): Promise<void> {
    try {
      await this.recordAsEnded(attempt, ending, transaction);
    } catch (err) {
      if (isConnectionError(err)) throw err;
      await this.recordRefused(attempt, ending, err);
    }
  }

  /**
   * PostgreSQL refused the write of `ending` (with `err`): the attempt fails, saying why. A refused
   * failure is recorded again with a message of the library's own, keeping the task's retry.
   */
  private async recordRefused(
    attempt: RunningAttempt,
    ending: AttemptEnding,
    err: unknown,
  ): Promise<void> {
    const { job } = attempt;
    const why = storableText(toError(err).message);
    const what = {
      completed: 'completion',
      snoozed: 'snooze',
      suspended: 'suspension',
      failed: 'failure',
    }[ending.outcome];
    this.logger.warn(
      `The database refused the ${what} of job ${job.id} (${job.task}, attempt ${job.attempt}): ${why}; ` +
        'recording the attempt as failed instead.',
    );
    const error = new Error(`The ${what} of the attempt could not be recorded: ${why}`, {
      cause: err,
    });
    const retry = ending.outcome === 'failed' ? ending.retry : { giveUp: false };
    try {
      await this.failed(attempt, { outcome: 'failed', error, retry });
    } catch (last) {
      if (isConnectionError(last)) throw last;
      throw new EndingNotRecordedError(job.id, job.task, job.attempt, last);
    }
  }

  private recordAsEnded(
    attempt: RunningAttempt,
    ending: AttemptEnding,
    transaction?: TaskTransaction,
  ): Promise<void> {
    if (transaction && (ending.outcome === 'completed' || ending.outcome === 'snoozed')) {
      return this.inTransaction(attempt, ending, transaction);
    }
    switch (ending.outcome) {
      case 'completed':
        return this.completed(attempt, ending);
      case 'snoozed':
        return this.snoozed(attempt, ending);
      case 'suspended':
        return this.suspended(attempt, ending);
      case 'failed':
        return this.failed(attempt, ending);
    }
  }

  /**
   * Queues the job again, suspended on its step's wait (`stepsSql.suspend`): a wait on an event
   * holds the event's lock while it checks for the event and registers, so that a `sendEvent` in
   * between either is seen or sees the wait.
   */
  private async suspended(attempt: RunningAttempt, { suspension }: Suspended): Promise<void> {
    const { job } = attempt;
    const { suspend, eventLock } = this.steps;
    const values = suspend.values({
      id: job.id,
      attempt: job.attempt,
      claim: job.claim,
      requeuedBy: this.options.instanceId,
      step: suspension.step,
      position: suspension.position,
      seconds: suspension.seconds,
      event: suspension.event ?? null,
      jobs: suspension.jobs ?? null,
    });
    const { value: rows, retried } = await this.write(attempt, 'the suspension', () =>
      suspension.event === undefined
        ? this.db.query<{ waitingFor: string }>(suspend, values)
        : this.db.transaction(async (client) => {
            await client.query(eventLock, [suspension.event]);
            return (await client.query<{ waitingFor: string }>(suspend.text, values)).rows;
          }),
    );
    if (rows.length === 0) return this.reportFenced(attempt, 'suspended', retried);
    this.events.suspended(job, parseWaitingFor(rows[0].waitingFor)!);
  }

  private async completed(attempt: RunningAttempt, ending: Completed): Promise<void> {
    const { job } = attempt;
    const { value: recorded, retried } = await this.write(attempt, 'the completion', () =>
      this.completions.complete(job, ending.result),
    );
    if (!recorded) return this.reportFenced(attempt, 'completed', retried);
    this.tellCompleted(attempt, ending);
  }

  private async snoozed(attempt: RunningAttempt, ending: Snoozed): Promise<void> {
    const { value: rows, retried } = await this.write(attempt, 'the snooze', () =>
      this.db.query(this.sql.snooze, this.snoozeValues(attempt, ending)),
    );
    if (rows.length === 0) return this.reportFenced(attempt, 'snoozed', retried);
    this.events.snoozed(attempt.job, ending.seconds);
  }

  private async failed(attempt: RunningAttempt, { error, retry }: Failed): Promise<void> {
    const { job } = attempt;
    const { fail } = this.sql;
    // A text column refuses NUL: the message is kept, with what it cannot hold replaced.
    const message = storableText(error.message);
    const { value: rows, retried: writeRetried } = await this.write(attempt, 'the failure', () =>
      this.db.query<{ retried: boolean }>(
        fail,
        fail.values({
          id: job.id,
          attempt: job.attempt,
          claim: job.claim,
          channel: this.channel,
          error: message,
          retryBackoff: this.options.retryBackoff,
          requeuedBy: this.options.instanceId,
          maxRetryDelay: this.options.maxRetryDelay,
          delay: retry.delay,
          giveUp: retry.giveUp,
          notification: endNotification(job.id, 'failed', message),
          stack: error.stack ? truncateUtf8(storableText(error.stack), MAX_STACK_BYTES) : null,
        }),
      ),
    );
    if (rows.length === 0) return this.reportFenced(attempt, 'failed', writeRetried);
    const retried = rows[0].retried;
    const gaveUp = retry.giveUp && job.attempt <= job.maxRetries;
    this.events.failed(job, error, retried, gaveUp);
    this.logger.warn(
      `Job ${job.id} (${job.task}) failed on attempt ${job.attempt}: ${message}` +
        (retried ? '; retrying.' : gaveUp ? '; the task gave up.' : '; no retries left.'),
    );
    if (!retried) this.waiters.settle({ id: job.id, state: 'failed', error: message });
  }

  /**
   * Writes the ending in the task's transaction and commits both, or neither. Not retried when the
   * database is unreachable: the transaction died with its connection, and the task's writes with
   * it. Whatever stops the commit (a statement the task broke, a lost connection) fails the attempt
   * instead, through the ordinary fenced write: if the commit did happen after all, that write is
   * fenced out and the completion stands.
   */
  private async inTransaction(
    attempt: RunningAttempt,
    ending: Completed | Snoozed,
    transaction: TaskTransaction,
  ): Promise<void> {
    const { job } = attempt;
    let rows: unknown[];
    try {
      rows =
        ending.outcome === 'completed'
          ? await this.completeIn(transaction, { job, result: ending.result })
          : await transaction.query(this.sql.snooze, this.snoozeValues(attempt, ending));
    } catch (err) {
      await transaction.rollback();
      return this.failedToCommit(attempt, err);
    }
    if (rows.length === 0) {
      await transaction.rollback();
      return this.reportFenced(attempt, ending.outcome, false);
    }
    try {
      await transaction.commit();
    } catch (err) {
      return this.failedToCommit(attempt, err);
    }
    if (ending.outcome === 'completed') this.tellCompleted(attempt, ending);
    else this.events.snoozed(job, ending.seconds);
  }

  /** Records one completion with `transaction`'s statements (see `CompletionBatcher` for the others). */
  private completeIn(
    transaction: TaskTransaction,
    completion: { job: RunningAttempt['job']; result: string | null },
  ): Promise<unknown[]> {
    const complete = completionStatement(this.sql, [completion]);
    return transaction.query(
      complete,
      complete.values({ completions: [completion], channel: this.channel }),
    );
  }

  private failedToCommit(attempt: RunningAttempt, err: unknown): Promise<void> {
    const error = new Error(
      `The transaction of the task could not commit with the end of its attempt: ${toError(err).message}`,
      { cause: err },
    );
    return this.failed(attempt, { outcome: 'failed', error, retry: { giveUp: false } });
  }

  private tellCompleted({ job }: RunningAttempt, { result }: Completed): void {
    this.events.completed(job);
    this.waiters.settle({ id: job.id, state: 'completed', result });
  }

  private snoozeValues({ job }: RunningAttempt, { seconds }: Snoozed): unknown[] {
    return this.sql.snooze.values({
      id: job.id,
      attempt: job.attempt,
      claim: job.claim,
      seconds,
      requeuedBy: this.options.instanceId,
    });
  }

  /**
   * An attempt's ending is written for as long as the database stays unreachable: the result is
   * kept if the database comes back before a reaper presumed this instance dead (the write is
   * fenced either way). Shutdown releasing the attempt ends the retries.
   */
  private write<T>(attempt: RunningAttempt, what: string, write: () => Promise<T>) {
    const { job } = attempt;
    return retryWhileUnreachable(
      `${what} of job ${job.id} (${job.task}, attempt ${job.attempt})`,
      write,
      () => attempt.released,
      this.logger,
    );
  }

  private reportFenced({ job }: RunningAttempt, outcome: string, retried: boolean): void {
    this.logger.warn(
      `Job ${job.id} (${job.task}) ${outcome} on attempt ${job.attempt}, but that attempt is no longer the ` +
        'active one (it was reaped or released); the result is dropped.' +
        (retried ? ' (An earlier try lost its connection and may have recorded it.)' : ''),
    );
  }
}
