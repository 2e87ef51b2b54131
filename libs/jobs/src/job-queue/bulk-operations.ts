import type { JobsDatabase } from '../database/jobs-database.js';
import type { StatementText } from '../database/sql-statement.js';
import type { JobEventEmitter } from '../events/job-event-emitter.js';
import { NEW_JOB_NOTIFICATION } from '../notify/notification-protocol.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { bulkDeleteSql } from './bulk-delete.sql.js';
import type { BulkDeleteSql } from './bulk-delete.sql.js';
import type {
  CancellableJobState,
  CancelJobsFilter,
  DeletableJobState,
  DeleteJobsFilter,
  RetryableJobState,
  RetryJobsFilter,
} from './job-filter.interface.js';
import type { QueueSql } from './job-queue.sql.js';
import { validateJobFilter } from './validate-queue-calls.js';

/** What `retryJobs` (and the admin API's bulk retry) may take. */
export const RETRYABLE: readonly RetryableJobState[] = ['failed', 'interrupted', 'cancelled'];
/** A cancelled job was cancelled on purpose: `retryJobs` takes it only when asked to. */
const RETRIED_BY_DEFAULT: readonly RetryableJobState[] = ['failed', 'interrupted'];
/** What `cancelJobs` (and the admin API's bulk cancel) may take, queued states first. */
export const CANCELLABLE: readonly CancellableJobState[] = [
  'blocked',
  'pending',
  'suspended',
  'active',
];

/**
 * What `deleteJobs` (and the admin API's bulk delete) may take, and takes by default: every state
 * of a job that ended for good (see `pickEndedJobs` in bulk-delete.sql.ts).
 */
export const DELETABLE: readonly DeletableJobState[] = [
  'completed',
  'failed',
  'interrupted',
  'cancelled',
  'skipped',
];
/** What a refused state of `deleteJobs` is told to do instead. */
const DELETE_STATE_HINT = ' (a job that has not ended is cancelled first: cancelJobs)';

/** Jobs one statement of a bulk call takes at most: each batch is a short transaction of its own. */
const BULK_BATCH_SIZE = 1000;

/** A job a bulk statement (or `cancelJob`) changed. */
export interface ChangedJob {
  readonly id: string;
  readonly task: string;
  readonly queue: string;
}

/** What one batch of a bulk statement did. */
interface BatchRow {
  readonly picked: number;
  readonly jobs: ChangedJob[];
}

/**
 * The calls of `JobQueueService` that change many jobs at once (`cancelJobs`, `retryJobs`,
 * `deleteJobs`, and the dashboard's retry of one job, which shares `retryJobs`' statement), in
 * batches.
 */
export class BulkOperations {
  private readonly deleteSql: BulkDeleteSql;

  constructor(
    private readonly options: ResolvedJobsOptions,
    private readonly db: JobsDatabase,
    private readonly sql: QueueSql,
    private readonly channel: string,
    private readonly events: JobEventEmitter,
    /** Settles the waiters of cancelled jobs and tells their events, as `cancelJob` does. */
    private readonly reportCancelled: (jobs: readonly ChangedJob[]) => void,
  ) {
    this.deleteSql = bulkDeleteSql(db.schema);
  }

  async cancelJobs(filter: CancelJobsFilter): Promise<number> {
    const { states, ...validated } = validateJobFilter(filter, CANCELLABLE, CANCELLABLE);
    // Only jobs enqueued before the call: a producer adding jobs meanwhile cannot keep it going.
    const now = await this.databaseNow();
    const { createdBefore: before } = validated;
    const createdBefore = before !== null && before < now ? before : now;
    let cancelled = 0;
    const batch = {
      filter: { ...validated, createdBefore },
      channel: this.channel,
      limit: BULK_BATCH_SIZE,
    };
    // Queued ones first: one claimed meanwhile is running by the time running ones are looked for.
    const queuedStates = states.filter((state) => state !== 'active');
    if (queuedStates.length > 0) {
      const { cancelQueuedJobs } = this.sql;
      cancelled += await this.inBatches(
        cancelQueuedJobs,
        cancelQueuedJobs.values({ ...batch, queuedStates }),
        this.reportCancelled,
      );
    }
    if (states.includes('active')) {
      const { cancelRunningJobs } = this.sql;
      cancelled += await this.inBatches(
        cancelRunningJobs,
        cancelRunningJobs.values(batch),
        this.reportCancelled,
      );
    }
    return cancelled;
  }

  async retryJobs(filter: RetryJobsFilter): Promise<number> {
    const { states, ...validated } = validateJobFilter(filter, RETRYABLE, RETRIED_BY_DEFAULT);
    // Only jobs that ended before the call: one that fails again meanwhile is not taken twice.
    const now = await this.databaseNow();
    const { retryJobs } = this.sql;
    return this.inBatches(
      retryJobs,
      retryJobs.values({
        filter: validated,
        states,
        endedAtOrBefore: now,
        createdBy: this.options.instanceId,
        limit: BULK_BATCH_SIZE,
        channel: this.channel,
        notification: NEW_JOB_NOTIFICATION,
      }),
      (jobs) => this.events.retried(jobs),
    );
  }

  async deleteJobs(filter: DeleteJobsFilter): Promise<number> {
    const { states, ...validated } = validateJobFilter(
      filter,
      DELETABLE,
      DELETABLE,
      DELETE_STATE_HINT,
    );
    // Only jobs that ended before the call: jobs ending meanwhile cannot keep it going.
    const endedAtOrBefore = await this.databaseNow();
    const { pickEndedJobs, deleteEndedJobs } = this.deleteSql;
    const pick = pickEndedJobs.values({
      filter: validated,
      states,
      endedAtOrBefore,
      limit: BULK_BATCH_SIZE,
    });
    let deleted = 0;
    for (;;) {
      // Two statements, one short transaction: the pick locks, the delete looks again (see
      // bulkDeleteSql). A picked job queued again meanwhile is left, and the next pick skips it.
      const batch = await this.db.transaction(async (client) => {
        const { rows } = await client.query<{ id: string }>(pickEndedJobs.text, pick);
        if (rows.length === 0) return { picked: 0, deleted: 0 };
        const ids = rows.map((row) => row.id);
        const done = await client.query<{ deleted: number }>(
          deleteEndedJobs.text,
          deleteEndedJobs.values({ ids }),
        );
        return { picked: rows.length, deleted: done.rows[0].deleted };
      });
      deleted += batch.deleted;
      if (batch.picked < BULK_BATCH_SIZE) return deleted;
    }
  }

  /** Retries job `id` (a valid id) if it ended for good; `false` if it is in no such state. */
  async retryJob(id: string): Promise<boolean> {
    const { retryJobs } = this.sql;
    const [row] = await this.db.query<BatchRow>(
      retryJobs,
      retryJobs.values({
        id,
        states: RETRYABLE,
        createdBy: this.options.instanceId,
        limit: 1,
        channel: this.channel,
        notification: NEW_JOB_NOTIFICATION,
      }),
    );
    this.events.retried(row.jobs);
    return row.jobs.length > 0;
  }

  /** The database's clock, which every row's times are on. */
  private async databaseNow(): Promise<Date> {
    const [{ now }] = await this.db.query<{ now: Date }>(this.sql.now);
    return now;
  }

  /** Runs a bulk statement until a batch picks fewer jobs than it may; returns how many it changed. */
  private async inBatches(
    statement: StatementText,
    values: unknown[],
    report: (jobs: readonly ChangedJob[]) => void,
  ): Promise<number> {
    let changed = 0;
    for (;;) {
      const [{ picked, jobs }] = await this.db.query<BatchRow>(statement, values);
      changed += jobs.length;
      report(jobs);
      if (picked < BULK_BATCH_SIZE) return changed;
    }
  }
}
