import { isConnectionError } from './connection-errors.js';

/** What a batched write waits for: its entry's outcome, or the database's refusal. */
export interface BatchedWrite {
  resolve(recorded: boolean): void;
  reject(err: unknown): void;
}

/**
 * Writes entries in batches: every entry that arrives while a write is in flight (or in the same
 * turn of the event loop) goes into the next write. One statement, one commit, for many entries:
 * without it, work that ends at a high rate spends its time waiting on a commit per entry.
 *
 * At most one write is in flight, so the batch grows exactly as fast as the database is slow.
 * A batch is sorted by `order` first, so that two statements locking some of the same rows lock
 * them in the same order.
 *
 * One entry PostgreSQL refuses fails the whole statement: a batch refused for anything but a lost
 * connection is written again entry by entry, so that the refusal stays with its own entry and the
 * others are recorded.
 */
export class StatementBatcher<Entry extends BatchedWrite> {
  private pending: Entry[] = [];
  private flushing = false;

  constructor(
    /** Writes `batch` in one statement and resolves its entries; throws what the database refused. */
    private readonly write: (batch: readonly Entry[]) => Promise<void>,
    private readonly order: (a: Entry, b: Entry) => number,
  ) {}

  add(entry: Entry): void {
    this.pending.push(entry);
    if (!this.flushing) {
      this.flushing = true;
      // Let the entries of this turn join the batch.
      setImmediate(() => void this.flush());
    }
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0).sort(this.order);
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
}
