import type { Logger } from '@nestjs/common';
import { toError } from '../common/errors.js';
import type { JobsDatabase } from '../database/jobs-database.js';
import type { JobEventEmitter } from '../events/job-event-emitter.js';
import { progressNotification } from '../notify/notification-protocol.js';
import type { ProgressNotification } from '../notify/notification-protocol.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import type { RunnerSql } from './runner.sql.js';
import type { RunningAttempt } from './running-attempts.js';
import type { TaskTransaction } from './task-transaction.js';

/** Where one attempt's progress stands: made on its first report, so that silence costs nothing. */
export interface ProgressState {
  /** The last value reported, as JSON. */
  latest: string;
  /** The last value written. */
  written?: string;
  /** The write in flight: one at a time, so that an older value never lands after a newer one. */
  writing?: Promise<void>;
  /** The write waiting for `progressInterval` to pass since the last one. */
  timer?: NodeJS.Timeout;
  /** `performance.now()` of the last write's start. */
  lastWriteAt: number;
  /** The attempt has ended: reports are no longer heard, only the final flush writes. */
  closed: boolean;
}

/**
 * The progress of this instance's running attempts, written coalesced: at most one write per
 * attempt per `progressInterval`, and the latest value always, at the latest just before the
 * attempt's ending is written. Each write tells every instance (`progress` notification), and this
 * one's listeners at once. Also relays the progress other instances tell of to this one's listeners.
 *
 * Progress is a report, not a result: a write that fails is logged and not retried, and a write of
 * an attempt that has ended is fenced out like any other.
 */
export class AttemptProgress {
  private readonly intervalMs: number;

  constructor(
    private readonly options: ResolvedJobsOptions,
    private readonly db: JobsDatabase,
    private readonly sql: RunnerSql,
    private readonly channel: string,
    private readonly events: JobEventEmitter,
    private readonly logger: Logger,
  ) {
    this.intervalMs = options.progressInterval * 1000;
  }

  /** Hears a value the attempt's task reported, as JSON (already checked). */
  report(attempt: RunningAttempt, json: string): void {
    const state = (attempt.progress ??= { latest: json, lastWriteAt: -Infinity, closed: false });
    if (state.closed) return;
    state.latest = json;
    this.schedule(attempt, state);
  }

  /**
   * The attempt is ending: writes its last value if it is not written yet, and stops listening.
   *
   * A `transactional` task's last value is written in its transaction, with its ending, and a
   * write in flight is not waited for: it may be waiting for a connection of the pool that the
   * transactions hold (every transactional attempt flushing at once would wait on each other for
   * ever), and it cannot land after the last value anyway: it waits for the transaction's lock on
   * the row, then finds the attempt ended.
   */
  async flush(attempt: RunningAttempt, transaction?: TaskTransaction): Promise<void> {
    const state = this.close(attempt);
    if (!state) return;
    if (!transaction) await state.writing;
    if (state.latest !== state.written) await this.write(attempt, state, transaction);
  }

  /** The attempt is no longer this instance's to report on (it was given back): writes nothing. */
  discard(attempt: RunningAttempt): void {
    this.close(attempt);
  }

  /** A progress notification: for this instance's listeners, unless this instance wrote it. */
  heard(notification: ProgressNotification): void {
    if (notification.instance === this.options.instanceId || !this.events.listening) return;
    if ('progress' in notification) {
      this.events.progress(notification, notification.progress);
      return;
    }
    const { progressOf } = this.sql;
    void this.db
      .query<{ progress: string | null }>(
        progressOf,
        progressOf.values({ id: notification.id, attempt: notification.attempt }),
      )
      .then(([row]) => {
        if (row?.progress != null) this.events.progress(notification, JSON.parse(row.progress));
      })
      .catch((err: unknown) =>
        this.logger.debug(
          `Reading the progress of job ${notification.id}: ${toError(err).message}`,
        ),
      );
  }

  private close(attempt: RunningAttempt): ProgressState | undefined {
    const state = attempt.progress;
    if (!state) return undefined;
    state.closed = true;
    clearTimeout(state.timer);
    state.timer = undefined;
    return state;
  }

  private schedule(attempt: RunningAttempt, state: ProgressState): void {
    if (state.writing || state.timer || state.latest === state.written) return;
    const wait = state.lastWriteAt + this.intervalMs - performance.now();
    if (wait <= 0) {
      void this.write(attempt, state);
      return;
    }
    state.timer = setTimeout(() => {
      state.timer = undefined;
      void this.write(attempt, state);
    }, wait);
  }

  private write(
    attempt: RunningAttempt,
    state: ProgressState,
    transaction?: TaskTransaction,
  ): Promise<void> {
    const { job } = attempt;
    const value = state.latest;
    const values = this.sql.progress.values({
      id: job.id,
      attempt: job.attempt,
      claim: job.claim,
      progress: value,
      channel: this.channel,
      notification: progressNotification(job, this.options.instanceId, value),
    });
    state.lastWriteAt = performance.now();
    state.writing = (
      transaction
        ? transaction.query(this.sql.progress, values)
        : this.db.query(this.sql.progress, values)
    )
      .then(
        (rows) => {
          state.written = value;
          if (rows.length > 0 && this.events.listening)
            this.events.progress(job, JSON.parse(value));
        },
        (err: unknown) =>
          this.logger.debug(
            `Writing the progress of job ${job.id} (${job.task}): ${toError(err).message}`,
          ),
      )
      .finally(() => {
        state.writing = undefined;
        if (!state.closed) this.schedule(attempt, state);
      });
    return state.writing;
  }
}
