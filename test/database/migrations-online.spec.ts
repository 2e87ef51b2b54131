import pg from 'pg';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { resolveJobsOptions } from '../../libs/jobs/src/options/resolve-options.js';
import { LATEST_SCHEMA_VERSION } from '../../libs/jobs/src/schema/migrations.js';
import { SchemaMigrator } from '../../libs/jobs/src/schema/schema-migrator.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const INDEX = 'job_history_state_ended_at';
const HISTORY_ROWS = 200_000;

let database: JobsDatabase;
beforeAll(async () => {
  database = await JobsDatabase.connect(
    resolveJobsOptions({ connection: db.url, schema: 'online' }),
  );
  // A fleet on version 4 with a big history: what migration 5 meets in production.
  await new SchemaMigrator(database).migrate(4);
  await db.query(
    `INSERT INTO online."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
     SELECT gen_random_uuid(), 'task' || (i % 7),
            (ARRAY['completed', 'completed', 'completed', 'failed', 'cancelled'])[1 + i % 5], 1, 0,
            now() - make_interval(secs => i), now() - make_interval(secs => i), now() - make_interval(secs => i)
     FROM generate_series(1, $1) AS i`,
    [HISTORY_ROWS],
  );
});
afterAll(() => database?.close());

/**
 * Runs `step` on a connection of its own, again and again, until `stop()`: a session doing its work
 * while the migration runs beside it.
 */
function repeatOnConnection(applicationName: string, step: (client: pg.Client) => Promise<void>) {
  const client = new pg.Client({ connectionString: db.url, application_name: applicationName });
  client.on('error', () => undefined);
  let running = true;
  const done = (async () => {
    await client.connect();
    while (running) await step(client);
    await client.end();
  })();
  return {
    stop: async () => {
      running = false;
      await done;
    },
  };
}

/** What the instances of a live fleet do meanwhile: claim (insert) and complete (update) history rows. */
function startWriter() {
  const commits: number[] = [];
  const loop = repeatOnConnection('fleet-writer', async (client) => {
    const {
      rows: [{ id }],
    } = await client.query<{ id: string }>(
      `INSERT INTO online."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt")
       VALUES (gen_random_uuid(), 'writer', 'active', 1, 0, now(), now()) RETURNING id`,
    );
    await client.query(
      `UPDATE online."jobHistory" SET state = 'completed', "completedAt" = now() WHERE id = $1`,
      [id],
    );
    commits.push(Date.now());
  });
  return { commits, stop: loop.stop };
}

/**
 * Samples, as often as it can, whether an index of the history is being built and whether the
 * writer waits on a lock.
 */
function startObserver() {
  const samples: { at: number; building: boolean; writerBlocked: boolean }[] = [];
  const loop = repeatOnConnection('fleet-observer', async (client) => {
    const {
      rows: [row],
    } = await client.query<{ building: boolean; writerBlocked: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_stat_progress_create_index
                      WHERE relid = 'online."jobHistory"'::regclass) AS building,
              EXISTS (SELECT 1 FROM pg_stat_activity
                      WHERE application_name = 'fleet-writer' AND wait_event_type = 'Lock') AS "writerBlocked"`,
    );
    samples.push({ at: Date.now(), ...row });
  });
  return { samples, stop: loop.stop };
}

async function indexState(): Promise<{ valid: boolean; definition: string } | undefined> {
  const [row] = await db.query<{ valid: boolean; definition: string }>(
    `SELECT i.indisvalid AS valid, pg_get_indexdef(i.indexrelid) AS definition
     FROM pg_index i WHERE i.indexrelid = to_regclass($1)`,
    [`online.${INDEX}`],
  );
  return row;
}

it('builds the dashboard index on a 200k-row history while a writer keeps committing, never blocked', async () => {
  const writer = startWriter();
  const observer = startObserver();
  await waitFor('the writer to commit', () => writer.commits.length > 10);
  try {
    expect(await new SchemaMigrator(database).migrate(5)).toBe(1);
  } finally {
    await observer.stop();
    await writer.stop();
  }

  const building = observer.samples.filter((sample) => sample.building);
  // The build was seen in progress, so the window below is the build's.
  expect(building.length).toBeGreaterThanOrEqual(3);
  const [from, to] = [building[0].at, building[building.length - 1].at];
  const committedDuringBuild = writer.commits.filter((at) => at >= from && at <= to).length;
  // A plain CREATE INDEX holds a SHARE lock for the whole build: the writer's first statement
  // waits on it (seen here as a Lock wait) and nothing commits until the build ends.
  expect(observer.samples.filter((sample) => sample.writerBlocked)).toEqual([]);
  if (process.env.JOBS_TEST_LOG)
    console.log({ samples: building.length, buildMs: to - from, committedDuringBuild });
  expect(committedDuringBuild).toBeGreaterThanOrEqual(5);

  expect(await indexState()).toEqual({
    valid: true,
    definition: expect.stringContaining('(state, "completedAt") INCLUDE (task, id)'),
  });
  const [{ version }] = await db.query<{ version: number }>(
    `SELECT max(version) AS version FROM online.migrations`,
  );
  expect(version).toBe(5);
});

it('repairs the INVALID index a cancelled concurrent build left, on the next boot', async () => {
  // Back to version 4, then a build of migration 5's index that dies half-way (cancelled, as a
  // deploy that is killed, a statement_timeout or a lost connection would end it).
  await db.query(`DROP INDEX IF EXISTS online.${INDEX}`);
  await db.query(`DELETE FROM online.migrations WHERE version = 5`);
  // A writer's open transaction holds the build in its first wait, after the INVALID index is in
  // the catalog and before it is built: the cancellation below always lands there.
  const writer = new pg.Client({ connectionString: db.url });
  writer.on('error', () => undefined);
  await writer.connect();
  await writer.query('BEGIN');
  await writer.query(
    `UPDATE online."jobHistory" SET "updatedAt" = now() WHERE id = (SELECT id FROM online."jobHistory" LIMIT 1)`,
  );
  const builder = new pg.Client({ connectionString: db.url, application_name: 'doomed-build' });
  builder.on('error', () => undefined);
  await builder.connect();
  const build = builder
    .query(
      `CREATE INDEX CONCURRENTLY ${INDEX} ON online."jobHistory" (state, "completedAt") INCLUDE (task, id)
       WHERE "completedAt" IS NOT NULL`,
    )
    .then(
      () => 'finished',
      (err: Error) => err.message,
    );
  await waitFor(
    'the build to wait for the open writer',
    async () =>
      (
        await db.query(
          `SELECT 1 FROM pg_stat_progress_create_index p JOIN pg_stat_activity a USING (pid)
           WHERE a.application_name = 'doomed-build' AND p.phase = 'waiting for writers before build'`,
        )
      ).length > 0,
    10_000,
  );
  await db.query(
    `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'doomed-build'`,
  );
  expect(await build).toMatch(/canceling statement due to user request/);
  await builder.end();
  await writer.query('COMMIT');
  await writer.end();
  // What IF NOT EXISTS alone would skip: an index of that name that no query can use.
  expect(await indexState()).toMatchObject({ valid: false });

  expect(await new SchemaMigrator(database).migrate(5)).toBe(1);
  expect(await indexState()).toMatchObject({ valid: true });

  // And a migration that built its index but died before recording its version runs again cleanly.
  await db.query(`DELETE FROM online.migrations WHERE version = 5`);
  expect(await new SchemaMigrator(database).migrate(5)).toBe(1);
  expect(await indexState()).toMatchObject({ valid: true });
});

it('migrates an empty database to the latest version', async () => {
  const fresh = await JobsDatabase.connect(
    resolveJobsOptions({ connection: db.url, schema: 'fresh' }),
  );
  try {
    const migrator = new SchemaMigrator(fresh);
    expect(await migrator.migrate()).toBe(LATEST_SCHEMA_VERSION);
    expect(await migrator.migrate()).toBe(0);
    await migrator.assertCurrent();
  } finally {
    await fresh.close();
  }
});
