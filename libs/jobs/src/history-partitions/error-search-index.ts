import type { Logger } from '@nestjs/common';
import type { JobsDatabase } from '../database/jobs-database.js';
import { errorSearchIndexSql } from './error-search-index.sql.js';

/** SQLSTATEs that say pg_trgm cannot be installed here at all: no use trying every round. */
const CANNOT_INSTALL = new Set([
  '42501', // insufficient_privilege: the role may not create objects in the database
  '58P01', // undefined_file: the server has no pg_trgm (PostgreSQL built without contrib)
  '0A000', // feature_not_supported
]);

/** What the partitions' upkeep lends the index: its short transactions, its soft steps. */
export interface UpkeepSteps {
  inShortTransaction(statements: string[]): Promise<boolean>;
  step<T>(what: string, run: () => Promise<T>): Promise<T | undefined>;
}

/**
 * Keeps a trigram index of history's last errors (the `errorSearchIndex` option), so that a search
 * by error text that few jobs match is an index look-up, not a test of every failed job's error
 * (see "Searching by error text" in docs/operations.md). It needs the `pg_trgm` extension: used
 * where it is installed, else installed into the module's schema; a database that refuses it is
 * told once, and searches work as before, without the index.
 *
 * This makes the index on the parent alone (`ON ONLY`, nothing built); the same round's
 * `completeIndexes` builds and attaches each partition's part, as it does for the indexes
 * migrations make that way, and partitions attached later get theirs from the attach itself. Run
 * by the instance holding the partitions' lease, each round: once made, a round costs one catalog
 * query, and takes no lock.
 */
export class ErrorSearchIndex {
  private readonly sql: ReturnType<typeof errorSearchIndexSql>;
  private unavailable = false;

  constructor(
    private readonly db: JobsDatabase,
    private readonly logger: Pick<Logger, 'warn'>,
  ) {
    this.sql = errorSearchIndexSql(db.schema);
  }

  async make(upkeep: UpkeepSteps): Promise<void> {
    if (this.unavailable) return;
    // Asked first: CREATE INDEX IF NOT EXISTS takes its SHARE lock on history, which waits for the
    // fleet's writes in flight and holds the next ones, before it finds the index there.
    const [{ made }] = await this.db.query<{ made: boolean }>(this.sql.made);
    if (made) return;
    const trigramSchema = await upkeep.step('finding pg_trgm for the error search index', () =>
      this.trigramSchema(),
    );
    if (!trigramSchema) return;
    await upkeep.step('making the error search index', () =>
      upkeep.inShortTransaction([this.sql.createParent(trigramSchema)]),
    );
  }

  /** Where pg_trgm is, installing it if it is not; `undefined` when it cannot be had. */
  private async trigramSchema(): Promise<string | undefined> {
    const [installed] = await this.db.query<{ schema: string }>(this.sql.trigramSchema);
    if (installed) return installed.schema;
    try {
      await this.db.query(this.sql.installTrigram);
    } catch (err) {
      const { code, message } = err as { code?: string; message: string };
      // Another instance installing it at the same moment: found next round.
      if (!code || !CANNOT_INSTALL.has(code)) throw err;
      // Two rounds at once (the one at start, one asked for) both fail: one says it.
      if (this.unavailable) return undefined;
      this.unavailable = true;
      this.logger.warn(
        `The error search index is not built: the pg_trgm extension cannot be installed (${message}). ` +
          'A search by error text tests every failed job kept instead. Install pg_trgm in this database ' +
          '(CREATE EXTENSION pg_trgm) and restart, or set errorSearchIndex: false to be told no more.',
      );
      return undefined;
    }
    const [row] = await this.db.query<{ schema: string }>(this.sql.trigramSchema);
    return row?.schema;
  }
}
