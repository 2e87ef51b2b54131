import { Inject, Injectable, Logger } from '@nestjs/common';
import { Tick } from '../common/tick.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { QueueStateService } from '../queue-state/queue-state.service.js';
import { MINUTE_CLOSE_GRACE_SECONDS, minuteStatsSql } from './minute-stats.sql.js';
import type { MinuteStatsSql, MinuteToWrite } from './minute-stats.sql.js';

/**
 * How often each instance asks whether a minute is to be written: a minute is written 5 to 15 s
 * after it ends. An ask that finds the minute taken is one update of one row that matches nothing.
 */
export const MINUTE_STATS_CHECK_MS = 10_000;

/** The per-minute rows are kept at least this long (s): the admin API reads up to a day of them. */
export const MIN_MINUTE_STATS_KEEP_SECONDS = 86_400;

/**
 * Writes the per-minute figures (migration 18) as they happen: once a minute, one instance of the
 * cluster takes the minute that just closed (`takeMinute`, a lease on its `jobLock` row), samples
 * every queue's depth (the counts of `JobQueueService.getQueues()`: a count of the queue grouped by
 * task, once a minute for the whole cluster, never on the claim's path) and writes, in one
 * statement, the minute's task rows (from history: the jobs that ended in it), its queue rows
 * (the sample), the task rows of the hour before, summed from its minutes (the first minute written
 * in an hour does so), and the deletion of the rows past `historyExpiration` (a day at least).
 *
 * A minute is written at most once: its row of `"jobMinute"` is inserted by the statement that
 * writes its figures, `ON CONFLICT DO NOTHING`. A minute that no instance wrote (every one was
 * down, or the one that took it died) is missing; the admin API reads such a minute's endings from
 * history while history keeps them, and has no depth for it.
 *
 * Runs on the instances that run jobs (`runJobs`), as the other upkeep does.
 */
@Injectable()
export class MinuteStatsRecorder {
  private readonly logger = new Logger('JobsMinuteStats');
  private readonly sql: MinuteStatsSql;
  private readonly tick: Tick;

  constructor(
    @Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
    @Inject(QueueStateService) private readonly queues: QueueStateService,
  ) {
    this.sql = minuteStatsSql(db.schema);
    this.tick = new Tick(
      'Writing the per-minute figures',
      MINUTE_STATS_CHECK_MS,
      () => this.recordClosedMinute(),
      this.logger,
    );
  }

  /**
   * Writes the minute that closed last, unless an instance took it already; returns the minute
   * written, or `null`.
   */
  async recordClosedMinute(): Promise<Date | null> {
    const [taken] = await this.db.query<{ minute: Date }>(this.sql.takeMinute, [
      this.options.instanceId,
      MINUTE_CLOSE_GRACE_SECONDS,
    ]);
    if (!taken) return null;
    return (await this.writeMinute(taken.minute)) ? taken.minute : null;
  }

  /**
   * Writes `minute` (the start of a minute) with the queues' depth `queues` (by default, as they
   * are now), unless it was written already; returns whether it wrote it. `recordClosedMinute`
   * calls it under the minute's lease; called directly (a backfill of history's minutes), it needs
   * no lease: the minute is written once all the same.
   */
  async writeMinute(minute: Date, queues?: MinuteToWrite['queues']): Promise<boolean> {
    queues ??= await this.queues.list();
    const [{ written }] = await this.db.query<{ written: boolean }>(
      this.sql.writeMinute.text,
      this.sql.writeMinute.values({
        minute,
        writtenBy: this.options.instanceId,
        queues,
        keepSeconds:
          this.options.historyExpiration === 0
            ? 0
            : Math.max(MIN_MINUTE_STATS_KEEP_SECONDS, this.options.historyExpiration),
      }),
    );
    return written;
  }

  /** @internal */
  start(): void {
    this.tick.start();
  }

  /** @internal */
  stop(): Promise<void> {
    return this.tick.stop();
  }
}
