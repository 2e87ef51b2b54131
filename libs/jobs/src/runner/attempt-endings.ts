import type { Logger } from '@nestjs/common';
import type { JobsDatabase } from '../database/jobs-database.js';
import type { LifecycleEmitter } from '../events/lifecycle-emitter.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import type { CompletionWaiters } from '../queue/completion-waiters.js';
import { CompletionBatcher } from './completion-batcher.js';
import { retryWhileUnreachable } from './retry-while-unreachable.js';
import type { RunnerSql } from './runner.sql.js';
import type { RunningAttempt } from './running-attempts.js';

/**
 * The writes that end an attempt whose task settled: completed (batched with the other completions
 * of the moment) or failed (and requeued while retries remain). Each is fenced by the attempt: a
 * write for an attempt that was reaped or released meanwhile changes nothing and is reported. Only
 * a write that took tells the job's events and whoever awaits the job.
 */
export class AttemptEndings {
  private readonly completions: CompletionBatcher;

  constructor(
    private readonly options: ResolvedJobsOptions,
    private readonly db: JobsDatabase,
    private readonly sql: RunnerSql,
    private readonly channel: string,
    private readonly waiters: CompletionWaiters,
    private readonly events: LifecycleEmitter,
    private readonly logger: Logger,
  ) {
    this.completions = new CompletionBatcher(db, sql.complete, channel);
  }

  async succeeded(attempt: RunningAttempt): Promise<void> {
    const { job } = attempt;
    const { value: recorded, retried } = await this.write(attempt, 'the completion', () =>
      this.completions.complete(job),
    );
    if (!recorded) return this.reportFenced(attempt, 'completed', retried);
    this.events.completed(job);
    this.waiters.settle({ id: job.id, state: 'completed' });
  }

  async failed(attempt: RunningAttempt, failure: Error): Promise<void> {
    const { job } = attempt;
    const { value: rows, retried: writeRetried } = await this.write(attempt, 'the failure', () =>
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
    if (rows.length === 0) return this.reportFenced(attempt, 'failed', writeRetried);
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
