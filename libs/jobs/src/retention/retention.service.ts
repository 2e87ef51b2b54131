import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { Tick } from '../common/tick.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { retentionSql } from './retention.sql.js';

/**
 * Batches after which a round that still finds expired rows says it is falling behind: jobs end
 * faster than `historyPruneBatchSize` rows per statement keep up with at this `scheduledCheck`.
 */
export const PRUNE_BATCHES_BEFORE_WARNING = 100;

/**
 * Prunes `jobHistory` of jobs that ended more than `historyExpiration` seconds ago, on every
 * `scheduledCheck`.
 *
 * Never one huge `DELETE`: each statement removes at most `historyPruneBatchSize` rows (a delete
 * of millions of rows holds its locks, bloats WAL and stalls replicas for as long as it runs). A
 * round goes on, batch after batch, yielding to the event loop between two, for as long as expired
 * rows remain, so history stays flat however many jobs end per second; a round that needs more
 * than `PRUNE_BATCHES_BEFORE_WARNING` batches logs that pruning is falling behind, and goes on: a
 * round capped at a number of batches lets history grow without bound, silently, once jobs end
 * faster than the cap removes them (see "History growth under a steady drain" in
 * docs/performance.md). Shutdown ends a round between two batches.
 *
 * @publicApi
 */
@Injectable()
export class RetentionService {
  private readonly logger = new Logger('JobsRetention');
  private readonly sql: ReturnType<typeof retentionSql>;
  private readonly tick: Tick;
  private stopping = false;

  /** @internal Nest constructs it: its parameters are the module's internals. */
  constructor(
    @Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
  ) {
    this.sql = retentionSql(db.schema);
    this.tick = new Tick(
      'Pruning job history',
      options.scheduledCheck * 1000,
      () => this.pruneExpiredHistory(),
      this.logger,
    );
  }

  /** Deletes one batch of expired history; returns how many rows it deleted. */
  async pruneBatch(): Promise<number> {
    if (this.options.historyExpiration === 0) return 0;
    const rows = await this.db.query(this.sql.pruneBatch, [
      this.options.historyExpiration,
      this.options.historyPruneBatchSize,
    ]);
    return rows.length;
  }

  /**
   * Deletes expired history batch by batch until a batch comes back short (none is left), or the
   * instance shuts down; returns the total.
   */
  async pruneExpiredHistory(): Promise<number> {
    const startedAt = Date.now();
    let total = 0;
    for (let batches = 1; ; batches++) {
      const deleted = await this.pruneBatch();
      total += deleted;
      if (deleted < this.options.historyPruneBatchSize || this.stopping) break;
      if (batches === PRUNE_BATCHES_BEFORE_WARNING) {
        this.logger.warn(
          `Pruning job history is falling behind: ${total} expired row(s) deleted in ${batches} batches ` +
            `(${seconds(startedAt)} s) and more remain. The round goes on until none do; jobs are ending faster ` +
            'than one round per scheduledCheck removes at this historyPruneBatchSize: raise it to delete more per statement.',
        );
      }
      // Claims and completions of this instance share the pool and the event loop with pruning.
      await yieldToEventLoop();
    }
    if (total > 0) {
      this.logger.log(
        `Pruned ${total} job history row(s) past historyExpiration in ${seconds(startedAt)} s.`,
      );
    }
    return total;
  }

  /** @internal With `historyExpiration: 0` history is kept forever. */
  start(): void {
    this.stopping = false;
    if (this.options.historyExpiration > 0) this.tick.start();
  }

  /** @internal */
  stop(): Promise<void> {
    this.stopping = true;
    return this.tick.stop();
  }
}

function seconds(since: number): string {
  return ((Date.now() - since) / 1000).toFixed(1);
}
