import { Logger } from '@nestjs/common';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import { assertOptionalPeerInstalled, importOptionalPeer } from '../common/optional-peer.js';
import { DatabaseUnreachableError } from '../errors/jobs.errors.js';
import { isConnectionError } from './connection-errors.js';
import type { StatementText } from './sql-statement.js';
import type { SchemaName } from './schema-name.js';
import { inTransaction } from './transaction.js';

/** Why a transactional task needs TypeORM, in `MissingPeerDependencyError`'s words. */
const TRANSACTION_PEER_WHY =
  'its ctx.manager is a TypeORM EntityManager, whose transaction also ends the job';

/** Anything that runs parameterised SQL: the module's pool, or a caller's TypeORM `EntityManager`. */
export interface SqlExecutor {
  query(text: string, values?: unknown[]): Promise<unknown>;
}

/** The module options the database layer reads, validated (part of `ResolvedJobsOptions`). */
export interface DatabaseOptions {
  /** Pool options of a pool the module owns; absent when `dataSource` is shared. */
  readonly connection?: pg.PoolConfig;
  readonly dataSource?: DataSource;
  readonly schema: SchemaName;
  readonly instanceId: string;
  readonly preparedStatements: boolean;
}

/**
 * The module's access to PostgreSQL: a `pg` pool, its own (`connection`) or the one under an app's
 * TypeORM `DataSource` (`dataSource`), on which every statement runs directly, without TypeORM's
 * per-query overhead.
 *
 * TypeORM is imported only for what needs it: with `connection`, a `transactional` task's
 * `EntityManager` (`transactionSource`), on the first such attempt. An app that uses neither does
 * not pay for loading it (see "Memory" in docs/performance.md).
 *
 * Session-scoped work (LISTEN, the migration lock) gets a dedicated client made from the pool's own
 * settings, so it neither holds one of the app's pooled connections nor breaks when a pooler would
 * have handed it a different backend.
 */
export class JobsDatabase {
  private static readonly logger = new Logger('JobsDatabase');
  private closed = false;
  /** The `DataSource` of `transactionSource()`, once made or when shared. */
  private source?: Promise<DataSource>;

  private constructor(
    /** The pool every statement runs on. */
    readonly pool: pg.Pool,
    /** The app's `DataSource`, when shared (`dataSource`). */
    readonly dataSource: DataSource | undefined,
    readonly schema: SchemaName,
    private readonly instanceId: string,
    private readonly prepare: boolean,
  ) {
    if (dataSource) this.source = Promise.resolve(dataSource);
  }

  static async connect(options: DatabaseOptions): Promise<JobsDatabase> {
    const { dataSource } = options;
    if (dataSource) {
      if (!dataSource.isInitialized) await connecting(dataSource.initialize());
      // The pg pool under TypeORM's postgres driver.
      const pool = (dataSource.driver as unknown as { master: pg.Pool }).master;
      return new JobsDatabase(
        pool,
        dataSource,
        options.schema,
        options.instanceId,
        options.preparedStatements,
      );
    }
    // Every pg option the user gave keeps its meaning; only the default name is the module's.
    const pool = new pg.Pool({
      application_name: applicationName(options.instanceId),
      ...options.connection,
    });
    // Without a listener, an idle client's error (the server restarted) would crash the process;
    // the pool drops that client and the next query connects anew.
    pool.on('error', (err) =>
      JobsDatabase.logger.warn(`A pooled connection failed: ${err.message}`),
    );
    // Connected once now, so that a refused connection fails the boot, saying so.
    try {
      (await connecting(pool.connect())).release();
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw err;
    }
    return new JobsDatabase(
      pool,
      undefined,
      options.schema,
      options.instanceId,
      options.preparedStatements,
    );
  }

  /**
   * A TypeORM `DataSource` on this pool, for the `EntityManager` of a `transactional` task: the
   * app's when it shares one; else one made on the first call, handed this pool as its pg driver's
   * pool (TypeORM's `driver` option), so that it opens no connection of its own. The module never
   * destroys it: it would end the pool, which `close()` ends.
   */
  transactionSource(): Promise<DataSource> {
    this.source ??= this.poolDataSource().catch((err: unknown) => {
      // Made again by the next attempt: the database may be back by then.
      this.source = undefined;
      throw err;
    });
    return this.source;
  }

  /**
   * Throws `MissingPeerDependencyError` (naming `neededBy`, a transactional task) unless
   * `transactionSource()` can make its `DataSource`: called at boot for each `transactional` task,
   * so that an app without TypeORM fails then, not at the task's first job. TypeORM is only found
   * here, not loaded (see the class's note on memory). A shared `dataSource` is TypeORM's already.
   */
  assertTransactionsPossible(neededBy: string): void {
    if (this.dataSource) return;
    assertOptionalPeerInstalled('typeorm', neededBy, TRANSACTION_PEER_WHY);
  }

  private async poolDataSource(): Promise<DataSource> {
    const { DataSource } = await importOptionalPeer(
      'typeorm',
      'A transactional task (@JobTask({ transactional: true }))',
      TRANSACTION_PEER_WHY,
      () => import('typeorm'),
    );
    const pool = this.pool;
    // TypeORM makes its pool with `new driver.Pool(options)`: this driver's answers with ours.
    const driver = {
      Pool: function Pool() {
        return pool;
      },
    };
    return connecting(new DataSource({ type: 'postgres', driver }).initialize());
  }

  /**
   * Runs one parameterised statement on the pool and returns its rows. A `PreparedStatement` runs
   * by name unless the `preparedStatements` option turned that off (for a pooler that cannot keep
   * them).
   */
  async query<Row>(
    statement: string | StatementText,
    values: readonly unknown[] = [],
  ): Promise<Row[]> {
    const query =
      typeof statement === 'string'
        ? { text: statement, values: values as unknown[] }
        : {
            name: this.prepare ? statement.name : undefined,
            text: statement.text,
            values: values as unknown[],
          };
    const result = await this.pool.query(query);
    return result.rows as Row[];
  }

  /**
   * Runs one statement inside a caller's transaction (its TypeORM `EntityManager`) when one is
   * given, else on the pool. A caller's manager runs it unprepared: its connection is not ours.
   */
  queryIn<Row>(
    manager: SqlExecutor | undefined,
    statement: string | StatementText,
    values: readonly unknown[],
  ): Promise<Row[]> {
    if (!manager) return this.query(statement, values);
    return queryRows(manager, typeof statement === 'string' ? statement : statement.text, values);
  }

  /** Runs `work` in a transaction on a client of the pool (see `inTransaction`, `withClient`). */
  transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.withClient((client) => inTransaction(client, () => work(client)));
  }

  /**
   * Runs `work` on a client checked out of the pool, then gives it back (destroyed if its
   * connection failed). While a client is checked out the pool no longer listens to its errors: a
   * connection the server ends (a terminated backend, a failover) would emit an `error` event that
   * nobody hears, and Node ends the process on it. The statement in flight rejects with that error
   * all the same; this listener only logs it (test/resilience/chaos-connection-loss.spec.ts).
   */
  async withClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let failed: Error | undefined;
    const onError = (err: Error) => {
      failed = err;
      JobsDatabase.logger.warn(`A connection in use failed: ${err.message}`);
    };
    client.on('error', onError);
    try {
      return await work(client);
    } finally {
      client.removeListener('error', onError);
      client.release(failed);
    }
  }

  /** A new, unconnected session client with the pool's settings, named for `role`. */
  createSessionClient(role: string): pg.Client {
    const settings = (this.pool as unknown as { options: pg.ClientConfig }).options;
    return new pg.Client({ ...settings, application_name: applicationName(this.instanceId, role) });
  }

  async close(): Promise<void> {
    if (this.closed || this.dataSource) return;
    this.closed = true;
    await this.pool.end();
  }
}

/**
 * Runs one statement on `executor` and returns its rows. A TypeORM `EntityManager` answers a
 * `DELETE`/`UPDATE` with `[rows, count]` and anything else with the rows; `pg` with a result object.
 */
async function queryRows<Row>(
  executor: SqlExecutor,
  text: string,
  values: readonly unknown[],
): Promise<Row[]> {
  const result = await executor.query(text, values as unknown[]);
  if (Array.isArray(result)) {
    return (
      result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number'
        ? result[0]
        : result
    ) as Row[];
  }
  return (result as pg.QueryResult).rows as Row[];
}

/** `connection`, whose refusal becomes a `DatabaseUnreachableError` that says so. */
function connecting<T>(connection: Promise<T>): Promise<T> {
  return connection.catch((err: unknown) => {
    throw isConnectionError(err) ? new DatabaseUnreachableError('connecting', err) : err;
  });
}

function applicationName(instanceId: string, role?: string): string {
  // Postgres truncates application_name at 63 bytes; the role suffix is what tells connections apart.
  const suffix = role ? `:${role}` : '';
  return `nestjs-pg-jobs ${instanceId}`.slice(0, 63 - suffix.length) + suffix;
}
