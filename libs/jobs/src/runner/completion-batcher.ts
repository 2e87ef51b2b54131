import type { JobsDatabase } from '../database/jobs-database.js';
import { StatementBatcher } from '../database/statement-batcher.js';
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
 * Writes successful attempts in batches (`StatementBatcher`): one statement, one commit, for the
 * completions of many jobs; without it a drain of no-op jobs spends its time waiting on a commit
 * per job.
 */
export class CompletionBatcher {
  private readonly batcher: StatementBatcher<PendingCompletion>;

  constructor(
    private readonly db: JobsDatabase,
    private readonly sql: Pick<RunnerSql, 'complete' | 'completeInFlow'>,
    private readonly channel: string,
  ) {
    this.batcher = new StatementBatcher(
      (batch) => this.write(batch),
      (a, b) => (a.job.id < b.job.id ? -1 : 1),
    );
  }

  /** Resolves `true` once recorded, `false` if the attempt was no longer the active one (fenced). */
  complete(job: ClaimedJob, result: string | null): Promise<boolean> {
    return new Promise((resolve, reject) =>
      this.batcher.add(new PendingCompletion(job, result, resolve, reject)),
    );
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
