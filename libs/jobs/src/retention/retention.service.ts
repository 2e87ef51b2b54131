import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { Tick } from '../common/tick.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { HistoryPartitions } from '../history-partitions/history-partitions.js';
import { DEFAULT_PARTITION, idBound } from '../history-partitions/partition-range.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { retentionSql } from './retention.sql.js';

/**
 * Batches after which a round that still finds expired rows says it is falling behind: jobs end
 * faster than `historyPruneBatchSize` rows per statement keep up with at this `scheduledCheck`.
 */
export const PRUNE_BATCHES_BEFORE_WARNING = 100;

/**
 * Flows deleted per statement: a flow has up to 10,000 jobs, so a batch is counted in flows, few
 * enough that one statement's deletes stay near `historyPruneBatchSize`'s default.
 */
const FLOWS_PER_BATCH = 10;

/**
 * Prunes `jobHistory` of jobs that ended more than `historyExpiration` seconds ago, on every
 * `scheduledCheck` (and once at start).
 *
 * History is partitioned by time (`historyPartitionInterval`): a round first keeps the partitions
 * (`HistoryPartitions`: made ahead, dropped whole once every job in them expired), then deletes in
 * batches what no drop removes: the rows of the default partition (ids of no time partition), and
 * those of a partition held past its drop by a row that outlives the rest.
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
  private readonly partitions: HistoryPartitions;
  private stopping = false;

  /** @internal Nest constructs it: its parameters are the module's internals. */
  constructor(
    @Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
  ) {
    this.sql = retentionSql(db.schema);
    this.partitions = new HistoryPartitions(options, db, this.logger);
    this.tick = new Tick(
      'Pruning job history',
      options.scheduledCheck * 1000,
      () => this.pruneExpiredHistory(),
      this.logger,
    );
  }

  /**
   * Deletes one batch of expired history from `partition` (by default the default partition, where
   * rows of no time partition are); returns how many rows it deleted.
   */
  async pruneBatch(partition = DEFAULT_PARTITION): Promise<number> {
    if (this.options.historyExpiration === 0) return 0;
    return this.db.transaction(async (client) => {
      await client.query(this.sql.prunePlan);
      const { rowCount } = await client.query(this.sql.pruneBatch(partition), [
        this.options.historyExpiration,
        this.options.historyPruneBatchSize,
      ]);
      return rowCount ?? 0;
    });
  }

  /**
   * Keeps the partitions (dropping the expired ones), then deletes the expired rows no drop removes,
   * batch by batch until a batch comes back short (none is left), or the instance shuts down;
   * returns the rows deleted. `lease: false` (for tests) keeps the partitions even if another
   * instance did so moments ago.
   */
  async pruneExpiredHistory({ lease = true } = {}): Promise<number> {
    let total = 0;
    if (this.options.historyExpiration > 0) await this.pruneExpiredFlows();
    for (const partition of await this.partitions.maintain({ lease })) {
      if (this.stopping) break;
      total += await this.prunePartition(partition);
    }
    if (this.options.historyExpiration > 0 && !this.stopping) await this.pruneJobRecords();
    return total;
  }

  /**
   * Deletes what expired jobs leave beside their history (their steps' checkpoints and failed
   * attempts) and old events (see `pruneJobRecords`).
   */
  private async pruneJobRecords(): Promise<void> {
    const batch = this.options.historyPruneBatchSize;
    for (;;) {
      const expiration = this.options.historyExpiration;
      const [{ deleted }] = await this.db.query<{ deleted: number }>(this.sql.pruneJobRecords, [
        expiration,
        batch,
        idBound(Date.now() - expiration * 1000),
      ]);
      if (deleted < batch || this.stopping) return;
      await yieldToEventLoop();
    }
  }

  /**
   * Deletes the flows whose every job expired, whole (see `pruneFlows`), batch by batch; returns
   * how many. Before the partitions' upkeep: a partition that held them can then be dropped.
   */
  async pruneExpiredFlows(): Promise<number> {
    let total = 0;
    const old = await this.db.query(this.sql.anyOldFlow, [this.options.historyExpiration]);
    if (old.length === 0) return 0;
    for (;;) {
      const deleted = (
        await this.db.query(this.sql.pruneFlows, [this.options.historyExpiration, FLOWS_PER_BATCH])
      ).length;
      total += deleted;
      if (deleted < FLOWS_PER_BATCH || this.stopping) break;
      await yieldToEventLoop();
    }
    if (total > 0) this.logger.log(`Pruned ${total} flow(s) whose every job expired.`);
    return total;
  }

  private async prunePartition(partition: string): Promise<number> {
    const startedAt = Date.now();
    let total = 0;
    for (let batches = 1; ; batches++) {
      const deleted = await this.pruneBatch(partition);
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
        `Pruned ${total} job history row(s) past historyExpiration from ${partition} in ${seconds(startedAt)} s.`,
      );
    }
    return total;
  }

  /**
   * @internal A round at once, so that partitions exist ahead from the start. With
   * `historyExpiration: 0` history is kept forever, and only partitions are made.
   */
  start(): void {
    this.stopping = false;
    if (this.options.historyExpiration > 0 || this.options.historyPartitionInterval > 0) {
      void this.tick.startNow();
    }
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
