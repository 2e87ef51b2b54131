import { Inject, Injectable, Logger } from '@nestjs/common';
import { Tick } from '../common/tick.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { reaperSql } from './reaper.sql.js';

/**
 * Requeues jobs that were claimed and never finished.
 *
 * A job leaves `jobs` when it is claimed and is marked `active` in history while it runs, so an
 * instance that dies mid-job leaves a row saying a job started that nothing will finish; nothing
 * else notices, since the job is no longer queued. `staleJobTimeout` is a "nobody could still be
 * working on this" threshold rather than a deadline: generous on purpose, since setting it too low
 * runs a job that is still running.
 *
 * @publicApi
 */
@Injectable()
export class ReaperService {
  private readonly logger = new Logger('JobsReaper');
  private readonly sql: ReturnType<typeof reaperSql>;
  private readonly tick: Tick;

  constructor(
    @Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
  ) {
    this.sql = reaperSql(db.schema);
    this.tick = new Tick(
      'Reaping stale jobs',
      options.scheduledCheck * 1000,
      () => this.reapStaleJobs(),
      this.logger,
    );
  }

  /** Requeues (or, with no attempts left, ends) abandoned `active` jobs; returns how many it requeued. */
  async reapStaleJobs(): Promise<number> {
    const after = this.options.staleJobTimeout;
    const [row] = await this.db.query<{ stranded: number; requeued: number }>(this.sql.reapStale, [
      after,
      `No instance reported on this job within ${after}s (staleJobTimeout); whatever was running it is gone.`,
      this.options.instanceId,
    ]);
    if (row.stranded > 0) {
      this.logger.warn(
        `Found ${row.stranded} interrupted job(s), ${row.requeued} of them requeued.`,
      );
    }
    return row.requeued;
  }

  /** @internal Reaps once (before this instance claims anything), then on every `scheduledCheck`. */
  async start(): Promise<void> {
    await this.reapStaleJobs().catch((err: Error) =>
      this.logger.warn(`Reaping stale jobs failed: ${err.message}`),
    );
    this.tick.start();
  }

  /** @internal */
  stop(): Promise<void> {
    return this.tick.stop();
  }
}
