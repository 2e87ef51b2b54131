import type { EntityManager, QueryRunner } from 'typeorm';
import type { JobsDatabase } from '../database/jobs-database.js';
import type { StatementText } from '../database/sql-statement.js';

/**
 * The transaction of one attempt of a `transactional` task: its `EntityManager` is the task's
 * `ctx.manager`, and the write that ends the attempt runs in it, so that the task's own writes and
 * the job's end commit together or not at all. It holds one connection of the pool from `begin`
 * until it is committed, rolled back or abandoned.
 */
export class TaskTransaction {
  private constructor(
    private readonly db: JobsDatabase,
    private readonly runner: QueryRunner,
  ) {}

  static async begin(db: JobsDatabase): Promise<TaskTransaction> {
    const runner = (await db.transactionSource()).createQueryRunner();
    try {
      await runner.connect();
      await runner.startTransaction();
    } catch (err) {
      await runner.release().catch(() => undefined);
      throw err;
    }
    return new TaskTransaction(db, runner);
  }

  get manager(): EntityManager {
    return this.runner.manager;
  }

  /** Runs one statement in the transaction and returns its rows. */
  query<Row>(statement: StatementText, values: readonly unknown[]): Promise<Row[]> {
    return this.db.queryIn<Row>(this.runner.manager, statement, values);
  }

  /** Commits and gives the connection back; throws if the commit failed (it may then not have). */
  async commit(): Promise<void> {
    try {
      await this.runner.commitTransaction();
    } finally {
      await this.runner.release();
    }
  }

  /** Rolls back and gives the connection back. Never throws: a lost connection rolled back too. */
  async rollback(): Promise<void> {
    try {
      await this.runner.rollbackTransaction();
    } catch {
      // The connection is gone or broken: PostgreSQL rolls back what it had.
    } finally {
      await this.runner.release().catch(() => undefined);
    }
  }

  /**
   * Ends the transaction of a task that was aborted but has not settled (it ignores its signal):
   * its session is terminated, so that the server rolls back at once and releases its locks, and
   * no statement the task sends later can run (a `ROLLBACK` would leave the session open to them,
   * where each would commit on its own). The connection is given back once the task settles; the
   * pool then drops it. The terminating statement runs on a session of its own: the pool may have
   * no connection to spare, when every one is held by a transaction.
   */
  async abandon(stray: Promise<void>): Promise<void> {
    const connection = (await this.runner.connect()) as { processID?: number | null };
    if (connection.processID) await this.terminate(connection.processID);
    // Only now: given back while still alive, the connection could serve someone else meanwhile.
    void stray.finally(() => this.runner.release().catch(() => undefined));
  }

  private async terminate(pid: number): Promise<void> {
    const session = this.db.createSessionClient('terminate');
    // Without an 'error' listener a dropped connection would crash the process.
    session.on('error', () => undefined);
    try {
      await session.connect();
      await session.query('SELECT pg_terminate_backend($1)', [pid]);
    } catch {
      // The database is unreachable: the session is gone with it, and its transaction too.
    } finally {
      await session.end().catch(() => undefined);
    }
  }
}
