import { Inject, Injectable, Logger } from '@nestjs/common';
import { Tick } from '../common/tick.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { retentionSql } from './retention.sql.js';

/** Batches one round deletes at most; what is left waits for the next `scheduledCheck`. */
const MAX_BATCHES_PER_ROUND = 100;

/**
 * Prunes `jobHistory` of jobs that ended more than `historyExpiration` seconds ago, on every
 * `scheduledCheck`.
 *
 * Never one huge `DELETE`: each statement removes at most `historyPruneBatchSize` rows (a delete
 * of millions of rows holds its locks, bloats WAL and stalls replicas for as long as it runs), and
 * one round stops after a bounded number of batches, leaving the rest to the next tick.
 *
 * @publicApi
 */
@Injectable()
export class RetentionService {
  private readonly logger = new Logger('JobsRetention');
  private readonly sql: ReturnType<typeof retentionSql>;
  private readonly tick: Tick;

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

  /** Deletes expired history batch by batch until a batch comes back short; returns the total. */
  async pruneExpiredHistory(): Promise<number> {
    let total = 0;
    for (let batch = 0; batch < MAX_BATCHES_PER_ROUND; batch++) {
      const deleted = await this.pruneBatch();
      total += deleted;
      if (deleted < this.options.historyPruneBatchSize) break;
    }
    if (total > 0) this.logger.log(`Pruned ${total} job history row(s) past historyExpiration.`);
    return total;
  }

  /** @internal With `historyExpiration: 0` history is kept forever. */
  start(): void {
    if (this.options.historyExpiration > 0) this.tick.start();
  }

  /** @internal */
  stop(): Promise<void> {
    return this.tick.stop();
  }
}
