import pg from 'pg';
import { DataSource } from 'typeorm';
import { DatabaseUnreachableError } from '../errors/jobs.errors.js';
import { isConnectionError } from './connection-errors.js';
import type { PreparedStatement } from './prepared-statement.js';
import type { SchemaName } from './schema-name.js';

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
 * The module's access to PostgreSQL: a TypeORM `DataSource` (its own, or one the app shares) and
 * the `pg` pool underneath it, which the hot path uses directly to save TypeORM's per-query
 * overhead.
 *
 * Session-scoped work (LISTEN, the migration lock) gets a dedicated client made from the pool's own
 * settings, so it neither holds one of the app's pooled connections nor breaks when a pooler would
 * have handed it a different backend.
 */
export class JobsDatabase {
  private closed = false;

  private constructor(
    readonly dataSource: DataSource,
    private readonly ownsDataSource: boolean,
    readonly schema: SchemaName,
    private readonly instanceId: string,
    private readonly prepare: boolean,
  ) {}

  static async connect(options: DatabaseOptions): Promise<JobsDatabase> {
    if (options.dataSource) {
      if (!options.dataSource.isInitialized) await initialize(options.dataSource);
      return new JobsDatabase(
        options.dataSource,
        false,
        options.schema,
        options.instanceId,
        options.preparedStatements,
      );
    }
    const dataSource = new DataSource({
      type: 'postgres',
      // `extra` is handed to `pg.Pool` as is, so every pg option the user gave keeps its meaning.
      extra: { application_name: applicationName(options.instanceId), ...options.connection },
    });
    await initialize(dataSource);
    return new JobsDatabase(
      dataSource,
      true,
      options.schema,
      options.instanceId,
      options.preparedStatements,
    );
  }

  /** The `pg.Pool` under the TypeORM postgres driver. */
  get pool(): pg.Pool {
    return (this.dataSource.driver as unknown as { master: pg.Pool }).master;
  }

  /**
   * Runs one parameterised statement on the pool and returns its rows. A `PreparedStatement` runs
   * by name unless the `preparedStatements` option turned that off (for a pooler that cannot keep
   * them).
   */
  async query<Row>(
    statement: string | PreparedStatement,
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
    statement: string | PreparedStatement,
    values: readonly unknown[],
  ): Promise<Row[]> {
    if (!manager) return this.query(statement, values);
    return queryRows(manager, typeof statement === 'string' ? statement : statement.text, values);
  }

  /** A new, unconnected session client with the pool's settings, named for `role`. */
  createSessionClient(role: string): pg.Client {
    const settings = (this.pool as unknown as { options: pg.ClientConfig }).options;
    return new pg.Client({ ...settings, application_name: applicationName(this.instanceId, role) });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsDataSource && this.dataSource.isInitialized) await this.dataSource.destroy();
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

/** TypeORM connects once at initialisation: a refused connection fails the boot here, saying so. */
async function initialize(dataSource: DataSource): Promise<void> {
  await dataSource.initialize().catch((err: unknown) => {
    throw isConnectionError(err) ? new DatabaseUnreachableError('connecting', err) : err;
  });
}

function applicationName(instanceId: string, role?: string): string {
  // Postgres truncates application_name at 63 bytes; the role suffix is what tells connections apart.
  const suffix = role ? `:${role}` : '';
  return `nestjs-pg-jobs ${instanceId}`.slice(0, 63 - suffix.length) + suffix;
}
