import type { Logger } from '@nestjs/common';
import type pg from 'pg';
import type { JobsDatabase } from '../database/jobs-database.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { ErrorSearchIndex } from './error-search-index.js';
import type { UpkeepSteps } from './error-search-index.js';
import { childIndexName, historyPartitionsSql } from './history-partitions.sql.js';
import {
  DEFAULT_PARTITION,
  PARTITION_LEAD_MS,
  partitionAge,
  partitionsToMake,
  startOfName,
  timePartitionOf,
} from './partition-range.js';
import type { TimePartition } from './partition-range.js';

/**
 * A partition up to this size has its part of an index built at once, in one of the upkeep's
 * short transactions with its attach: milliseconds of its writes held, and a lock wait that ends
 * soon. A CONCURRENTLY build instead waits, lock timeout aside, for every transaction older than
 * it, and a schema change of the partition meanwhile (another DDL) ends in a deadlock that
 * PostgreSQL may settle by cancelling the other session's statement; a larger partition is still
 * worth that.
 */
const BUILT_AT_ONCE_BYTES = 8 * 1024 * 1024;

/** SQLSTATE of a lock wait past `lock_timeout`: the step is tried again next round. */
const LOCK_NOT_AVAILABLE = '55P03';

type Options = Pick<
  ResolvedJobsOptions,
  | 'historyExpiration'
  | 'historyPartitionInterval'
  | 'scheduledCheck'
  | 'migrationTableLockTimeout'
  | 'instanceId'
  | 'errorSearchIndex'
>;

/**
 * Keeps `jobHistory` partitioned by time: attaches partitions ahead of the clock and drops whole
 * the ones whose rows all expired, so that retention deletes no rows one by one (see
 * docs/operations.md, "Retention"). The parent (migration 13) partitions by RANGE (id): a job id
 * of version 7 starts with the time it was made, so a partition holds the jobs enqueued in its
 * interval, and a look-up by id probes one partition's primary key. Rows of no time partition
 * (ids of version 4 from before, ids of a time no partition covered) are in the default partition,
 * pruned in batches as before.
 *
 * Every DDL statement runs in its own short transaction whose lock waits are short (see
 * `inShortTransaction`): a lock it cannot get soon (behind a long transaction on history) gives
 * the queued claims their turn and is tried again next round. Instances share the work through a
 * lease (`takeLease`), and every step re-reads the catalog, so two instances that meet anyway only
 * see a step fail and skip it.
 */
export class HistoryPartitions implements UpkeepSteps {
  private readonly sql: ReturnType<typeof historyPartitionsSql>;
  private readonly errorSearchIndex: ErrorSearchIndex;

  constructor(
    private readonly options: Options,
    private readonly db: JobsDatabase,
    private readonly logger: Pick<Logger, 'log' | 'warn'>,
  ) {
    this.sql = historyPartitionsSql(db.schema);
    this.errorSearchIndex = new ErrorSearchIndex(db, logger);
  }

  /**
   * One round: under the lease, drops what a failed round left, makes the error search index
   * (`errorSearchIndex`) on the parent, builds the indexes made on the parent alone on the
   * partitions that exist (`completeIndexes`), attaches the partitions ahead, and drops the due
   * partitions that hold nothing to keep. Returns the tables whose expired rows are
   * deleted in batches: the default partition, and the overdue partitions (held by a row that
   * outlives the rest).
   */
  async maintain({ lease = true } = {}): Promise<string[]> {
    const leased =
      !lease ||
      (
        await this.db.query(this.sql.takeLease, [
          this.options.instanceId,
          this.options.scheduledCheck / 2,
        ])
      ).length > 0;
    let { now, attached } = await this.list();
    if (leased) {
      await this.dropDetachedTables(attached, now);
      if (this.options.errorSearchIndex) await this.errorSearchIndex.make(this);
      await this.completeIndexes();
      if (this.options.historyPartitionInterval > 0) {
        for (const partition of partitionsToMake(
          attached,
          now,
          this.options.historyPartitionInterval * 1000,
          this.aheadMs(),
        )) {
          await this.make(partition);
        }
      }
      if (this.options.historyExpiration > 0) {
        for (const partition of attached) {
          if (partitionAge(partition, now, this.expirationMs()) !== 'recent') {
            await this.dropIfExpired(partition);
          }
        }
      }
      ({ now, attached } = await this.list());
    }
    if (this.options.historyExpiration === 0) return [];
    const overdue = attached.filter(
      (partition) => partitionAge(partition, now, this.expirationMs()) === 'overdue',
    );
    return [DEFAULT_PARTITION, ...overdue.map((partition) => partition.name)];
  }

  /** The database's clock and the attached time partitions, oldest first. */
  async list(): Promise<{ now: number; attached: TimePartition[] }> {
    const [row] = (await this.db.query(this.sql.partitions)) as {
      now: number;
      names: string[];
      bounds: string[];
    }[];
    const attached = row.names
      .map((name, i) => timePartitionOf(name, row.bounds[i]))
      .filter((partition): partition is TimePartition => partition !== undefined)
      .sort((a, b) => a.from - b.from);
    return { now: row.now, attached };
  }

  /**
   * How far ahead partitions exist: past the minute no partition may start in
   * (`PARTITION_LEAD_MS`), two intervals and one more round, so that a round that is late or fails
   * leaves the next ones time. Without the lead, intervals shorter than half a minute were never
   * made (every one of them started within the lead) and history stayed in the default partition.
   */
  private aheadMs(): number {
    return (
      PARTITION_LEAD_MS +
      (2 * this.options.historyPartitionInterval + this.options.scheduledCheck) * 1000
    );
  }

  private expirationMs(): number {
    return this.options.historyExpiration * 1000;
  }

  /** Creates and attaches `partition`, unless the default partition holds rows of its range to keep. */
  private async make(partition: TimePartition): Promise<void> {
    const [inRange] = (await this.db.query(this.sql.defaultHoldsRange(partition))) as {
      held: boolean;
    }[];
    const [{ held }] = inRange.held
      ? ((await this.db.query(this.sql.clearDefaultRange(partition), [
          this.options.historyExpiration,
        ])) as { held: boolean }[])
      : [inRange];
    if (held) {
      this.logger.warn(
        `History partition ${partition.name} is not made: the default partition holds rows of its range that ` +
          'are to be kept; they stay there, and its jobs are recorded there until the next partition begins.',
      );
      return;
    }
    await this.step(`making ${partition.name}`, async () => {
      await this.inShortTransaction([this.sql.createTable(partition)]);
      await this.inShortTransaction([this.sql.addElsewhere(partition)]);
      try {
        await this.inShortTransaction([this.sql.validateElsewhere(partition)]);
        await this.inShortTransaction([this.sql.attach(partition)]);
      } finally {
        await this.inShortTransaction([this.sql.dropElsewhere(partition)]);
      }
    });
  }

  /**
   * Builds, on each partition that lacks it, the index of every history index made on the parent
   * alone (`ON ONLY`, by a migration or the error search index: building it there would block the
   * fleet's writes for the whole build), and attaches it; once every partition's is attached,
   * PostgreSQL makes the parent's valid and queries use it. A partition up to
   * `BUILT_AT_ONCE_BYTES` has its index built and attached in one short transaction; a larger one
   * CONCURRENTLY. An invalid leftover of a failed build is dropped first, so that the build is
   * tried again; one that another session is building is left to it. Each build is a step: one
   * that fails is tried next round.
   */
  async completeIndexes(): Promise<void> {
    const missing = (await this.db.query(this.sql.partitionsMissingIndexes)) as {
      index: string;
      partition: string;
      method: string;
      bytes: number;
    }[];
    for (const { index, partition, method, bytes } of missing) {
      const child = childIndexName(index, partition);
      await this.step(`building ${child} on ${partition}`, async () => {
        const [existing] = (await this.db.query(this.sql.indexBuildState, [
          this.db.schema.name,
          child,
        ])) as { invalid: boolean; building: boolean }[];
        // Another session builds it (a round that overran its lease): its own attach follows.
        if (existing?.building) return;
        if (bytes <= BUILT_AT_ONCE_BYTES) {
          // An index of that name here is attached to nothing: what a failed build left.
          await this.inShortTransaction([
            this.sql.dropIndex(child),
            this.sql.buildPartitionIndex(child, partition, method, false),
            this.sql.attachIndex(index, child),
          ]);
          return;
        }
        if (existing?.invalid) await this.db.query(this.sql.dropIndexConcurrently(child));
        await this.db.query(this.sql.buildPartitionIndex(child, partition, method, true));
        await this.inShortTransaction([this.sql.attachIndex(index, child)]);
      });
    }
  }

  /** Detaches and drops `partition` if every row in it expired and none is to be kept. */
  private async dropIfExpired(partition: TimePartition): Promise<void> {
    const expiration = [this.options.historyExpiration];
    const [{ droppable }] = (await this.db.query(this.sql.droppable(partition), expiration)) as {
      droppable: boolean;
    }[];
    if (!droppable) return;
    await this.step(`dropping ${partition.name}`, async () => {
      // Checked again once detached: no write can reach it any more.
      const detached = await this.inShortTransaction(
        [this.sql.detach(partition)],
        async (client) =>
          (
            (await client.query(this.sql.droppable(partition), expiration)).rows[0] as {
              droppable: boolean;
            }
          ).droppable,
      );
      if (!detached) return;
      await this.db.query(this.sql.dropTable(partition.name));
      this.logger.log(`Dropped history partition ${partition.name}: every job in it expired.`);
    });
  }

  /**
   * Tables named as partitions that no partition is: a round that detached one and failed to drop
   * it, or made one and failed to attach it. Only ranges past every clock are dropped (a table of
   * a range ahead may be one another instance is attaching now).
   */
  private async dropDetachedTables(attached: TimePartition[], now: number): Promise<void> {
    const rows = (await this.db.query(this.sql.detachedTables, [this.db.schema.name])) as {
      name: string;
    }[];
    const current = new Set(attached.map((partition) => partition.name));
    for (const { name } of rows) {
      if (current.has(name) || startOfName(name) >= now - this.aheadMs() - this.expirationMs()) {
        continue;
      }
      await this.step(`dropping the detached ${name}`, () =>
        this.db.query(this.sql.dropTable(name)),
      );
    }
  }

  /**
   * Runs `statements` in one transaction, then `check`, which commits it when true and rolls it
   * back when false.
   *
   * Its lock waits end at a quarter of the server's `deadlock_timeout` (250 ms at PostgreSQL's
   * default), or sooner at `migrationTableLockTimeout`. A lock request of the upkeep waiting in a
   * queue makes every later request of the fleet on that table wait behind it, and it is the only
   * request that conflicts with the fleet's reads: any wait cycle through history goes through it.
   * Its wait ends before a session that began waiting behind it can have waited
   * `deadlock_timeout`, so such a cycle ends by the upkeep's lock timeout (the step is tried again
   * next round), not by a deadlock error in a `getJob`, a claim or an ending; and the stall it
   * causes is bounded (test/database/history-partition-locks.spec.ts).
   *
   * The transaction may hold an ACCESS EXCLUSIVE lock on the default partition (a CHECK added or
   * dropped, an attach), which stops every claim and completion of the fleet while held: should
   * this instance stall between two of its statements (a pause, a long GC, a frozen VM), the server
   * ends the session once it has been idle in the transaction for `migrationTableLockTimeout`, and
   * the locks go with it (test/reaper/reaper-fencing.spec.ts pauses an instance that may be
   * making partitions).
   */
  async inShortTransaction(
    statements: string[],
    check?: (client: pg.PoolClient) => Promise<boolean>,
  ): Promise<boolean> {
    const timeout = Math.max(1, Math.round(this.options.migrationTableLockTimeout * 1000));
    return this.db
      .transaction(async (client) => {
        await client.query(this.sql.upkeepTimeouts, [timeout]);
        for (const statement of statements) await client.query(statement);
        if (check && !(await check(client))) throw ROLLED_BACK;
        return true;
      })
      .catch((err: unknown) => {
        if (err === ROLLED_BACK) return false;
        throw err;
      });
  }

  /**
   * A step that fails is logged and tried again next round; the round goes on. Returns what `run`
   * returned, `undefined` when it failed.
   */
  async step<T>(what: string, run: () => Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (err) {
      const reason =
        (err as { code?: string }).code === LOCK_NOT_AVAILABLE
          ? 'a lock was not granted in time: the upkeep gives way to the statements of history after a ' +
            `quarter of deadlock_timeout, or migrationTableLockTimeout (${this.options.migrationTableLockTimeout}s) if shorter`
          : (err as Error).message;
      this.logger.warn(`History partitions: ${what} failed (${reason}); tried again next round.`);
      return undefined;
    }
  }
}

const ROLLED_BACK = Symbol('rolled back');
