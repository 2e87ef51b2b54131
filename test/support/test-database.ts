import pg from 'pg';
import { createDatabase } from 'nestjs-pg-jobs/testing';
import { closeOpenApps } from './jobs-app.js';

export interface TestDatabase {
  /** Connection string of this file's own database. */
  url: string;
  /** Runs a statement on it and returns the rows. */
  query<Row = Record<string, unknown>>(text: string, values?: unknown[]): Promise<Row[]>;
  /** The `jobHistory` row of job `id` (its latest attempt's end, or the running attempt), if any. */
  historyOf(id: string): Promise<HistoryRow | undefined>;
}

/** The columns of a `jobHistory` row the tests assert on. */
export interface HistoryRow {
  state: string;
  attempt: number;
  lastErrorMessage: string | null;
  executedBy: string | null;
  awaited: boolean;
}

/**
 * Gives the calling test file a fresh database of its own, created before its tests and dropped
 * after them, on the server `global-setup` found. Apps still open then are closed first: their
 * shutdown writes to the database (Jest runs `afterAll` hooks in declaration order, so a file's own
 * hooks may come after this one).
 */
export function useTestDatabase(prefix = 'jobs_test'): TestDatabase {
  let drop: (() => Promise<void>) | undefined;
  let pool: pg.Pool | undefined;
  const handle: TestDatabase = {
    url: '',
    query: async (text, values) => (await pool!.query(text, values)).rows,
    historyOf: async (id) =>
      (
        await handle.query<HistoryRow>(
          `SELECT state, attempt, "lastErrorMessage", "executedBy", awaited
             FROM jobs."jobHistory" WHERE id = $1`,
          [id],
        )
      )[0],
  };
  beforeAll(async () => {
    const serverUrl = process.env.JOBS_TEST_SERVER_URL;
    if (!serverUrl)
      throw new Error('JOBS_TEST_SERVER_URL is unset: run the tests through jest.config.mjs');
    const database = await createDatabase(serverUrl, prefix);
    handle.url = database.url;
    drop = database.drop;
    pool = new pg.Pool({ connectionString: database.url, max: 3 });
    pool.on('error', () => undefined);
  });
  afterAll(async () => {
    await closeOpenApps(async () =>
      (
        await pool!.query<{ session: string }>(
          `SELECT concat_ws(' | ', application_name, state, wait_event_type, wait_event,
                            left(query, 300)) AS session
             FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()`,
        )
      ).rows
        .map((row) => row.session)
        .join('\n'),
    );
    await pool?.end();
    await drop?.();
  });
  return handle;
}
