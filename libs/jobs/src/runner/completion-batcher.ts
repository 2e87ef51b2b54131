import { isConnectionError } from '../database/connection-errors.js';
import type { JobsDatabase } from '../database/jobs-database.js';
import type { ClaimedJob } from './claim.sql.js';
import { completionStatement } from './ending.sql.js';
import type { RunnerSql } from './runner.sql.js';

/** A completion waiting for its write. A class, not an object literal: see "Memory" in docs/performance.md. */
class PendingCompletion {
  constructor(
    readonly job: ClaimedJob,
    /** The result as JSON text, `null` when the task returned nothing. */
    readonly result: string | null,
    readonly resolve: (recorded: boolean) => void,
    readonly reject: (err: unknown) => void,
  ) {}
}

/**
 * Writes successful attempts in batches: every completion that arrives while a write is in flight
 * (or in the same turn of the event loop) goes into the next write. One statement, one commit, for
 * many jobs: without it a drain of no-op jobs spends its time waiting on a commit per job.
 *
 * At most one write is in flight, so the batch grows exactly as fast as the database is slow.
 *
 * One completion PostgreSQL refuses fails the whole statement: a batch refused for anything but a
 * lost connection is written again entry by entry, so that the refusal stays with its own entry
 * and the others are recorded.
 */
export class CompletionBatcher {
  private pending: PendingCompletion[] = [];
  private flushing = false;

  constructor(
    private readonly db: JobsDatabase,
    private readonly sql: Pick<RunnerSql, 'complete' | 'completeInFlow'>,
    private readonly channel: string,
  ) {}

  /** Resolves `true` once recorded, `false` if the attempt was no longer the active one (fenced). */
  complete(job: ClaimedJob, result: string | null): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.pending.push(new PendingCompletion(job, result, resolve, reject));
      if (!this.flushing) {
        this.flushing = true;
        // Let the completions of this turn join the batch.
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      // Sorted, so that two statements locking some of the same rows lock them in the same order.
      const batch = this.pending.splice(0).sort((a, b) => (a.job.id < b.job.id ? -1 : 1));
      try {
        await this.write(batch);
      } catch (err) {
        if (batch.length === 1 || isConnectionError(err)) {
          for (const entry of batch) entry.reject(err);
          continue;
        }
        for (const entry of batch) await this.write([entry]).catch(entry.reject);
      }
    }
    this.flushing = false;
  }

  /** Writes `batch` in one statement and resolves its entries; throws what the database refused. */
  private async write(batch: readonly PendingCompletion[]): Promise<void> {
    const statement = completionStatement(this.sql, batch);
    const rows = await this.db.query<{ id: string }>(
      statement,
      statement.values({ completions: batch, channel: this.channel }),
    );
    const recorded = new Set(rows.map((row) => row.id));
    for (const entry of batch) entry.resolve(recorded.has(entry.job.id));
  }
}
