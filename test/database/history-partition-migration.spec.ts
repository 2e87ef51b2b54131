import pg from 'pg';
import { newJobId } from '../../libs/jobs/src/common/job-id.js';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { childIndexName } from '../../libs/jobs/src/history-partitions/history-partitions.sql.js';
import { resolveJobsOptions } from '../../libs/jobs/src/options/resolve-options.js';
import { RetentionService } from '../../libs/jobs/src/retention/retention.service.js';
import { SchemaMigrator } from '../../libs/jobs/src/schema/schema-migrator.js';
import { LATEST_SCHEMA_VERSION } from '../../libs/jobs/src/schema/migrations.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const ROWS = 1_000_000;
/**
 * The longest any statement of the writer may wait for a lock: a catalog change commits in
 * milliseconds, while a scan of the million rows under a lock that blocks writes (an attach that
 * validates, a rewrite) takes far longer, and fails the writer's statement with SQLSTATE 55P03.
 */
const WRITER_LOCK_TIMEOUT = '200ms';

let database: JobsDatabase;
let options: ReturnType<typeof resolveJobsOptions>;
beforeAll(async () => {
  options = resolveJobsOptions({
    connection: db.url,
    schema: 'big',
    // Nothing expires here: the rows are all kept, and counted after.
    historyExpiration: 86_400,
    historyPartitionInterval: 600,
    // Its build reads the default partition's million rows too (test/database/error-search-index.spec.ts):
    // the reads counted here are the partitions' upkeep's.
    errorSearchIndex: false,
  });
  database = await JobsDatabase.connect(options);
  // A fleet on version 12 with a big history: random ids (version 4) from before ids sorted by
  // time, and some of version 7.
  await new SchemaMigrator(database).migrate(12);
  await db.query(
    `INSERT INTO big."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
     SELECT CASE WHEN i % 2 = 0 THEN gen_random_uuid()
                 ELSE (lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint - i), 12, '0')
                       || '7000' || '8000' || lpad(to_hex(i), 12, '0'))::uuid END,
            'task' || (i % 7), (ARRAY['completed', 'completed', 'failed', 'cancelled'])[1 + i % 4], 1, 0,
            now() - make_interval(secs => i / 100.0), now() - make_interval(secs => i / 100.0),
            now() - make_interval(secs => i / 100.0)
     FROM generate_series(1, $1) AS i`,
    [ROWS],
  );
}, 120_000);
afterAll(() => database?.close());

/** A session that records jobs as the fleet does (claim: insert; end: update) until stopped. */
function startWriter() {
  const client = new pg.Client({ connectionString: db.url, application_name: 'fleet-writer' });
  client.on('error', () => undefined);
  const ids: string[] = [];
  const errors: string[] = [];
  let running = true;
  const done = (async () => {
    await client.connect();
    await client.query(`SET lock_timeout = '${WRITER_LOCK_TIMEOUT}'`);
    while (running) {
      const id = newJobId();
      try {
        await client.query(
          `INSERT INTO big."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt")
           VALUES ($1, 'writer', 'active', 1, 0, now(), now())
           ON CONFLICT (id) DO UPDATE SET state = 'active'`,
          [id],
        );
        await client.query(
          `UPDATE big."jobHistory" SET state = 'completed', "completedAt" = now() WHERE id = $1 AND state = 'active'`,
          [id],
        );
        ids.push(id);
      } catch (err) {
        errors.push(`${(err as { code?: string }).code}: ${(err as Error).message}`);
      }
    }
    await client.end();
  })();
  return { ids, errors, stop: () => ((running = false), done) };
}

/** Rows read by sequential scans of the table so far, as the statistics say once flushed. */
async function seqRowsRead(oid: number): Promise<number> {
  const [{ read }] = await db.query<{ read: number }>(
    `SELECT pg_stat_clear_snapshot(), coalesce(seq_tup_read, 0)::float8 AS read
     FROM pg_stat_all_tables WHERE relid = $1`,
    [oid],
  );
  return read;
}

it('partitions a history of 1,000,000 rows with catalog changes only, a writer never waiting past its lock_timeout', async () => {
  const [{ oid }] = await db.query<{ oid: number }>(
    `SELECT 'big."jobHistory"'::regclass::oid::int AS oid`,
  );
  const readBefore = await seqRowsRead(oid);
  const writer = startWriter();
  await waitFor('the writer to commit', () => writer.ids.length > 10);
  let migrated: number;
  try {
    migrated = await new SchemaMigrator(database).migrate();
    const after = writer.ids.length;
    await waitFor('the writer to commit after the migration', () => writer.ids.length > after + 10);

    // The upkeep makes the partitions ahead: each one's CHECK on the default partition (the
    // million rows) is validated under SHARE UPDATE EXCLUSIVE, which writes go through.
    const retention = new RetentionService(options, database);
    await retention.pruneExpiredHistory({ lease: false });
    const made = writer.ids.length;
    await waitFor('the writer to commit into the partitions', () => writer.ids.length > made + 10);
  } finally {
    await writer.stop();
  }
  // Migration 13 and those after it.
  expect(migrated).toBe(LATEST_SCHEMA_VERSION - 12);
  expect(writer.errors).toEqual([]);

  // The table so far is the default partition, neither scanned by the migration nor copied.
  const [{ partition, partitioned }] = await db.query<{ partition: string; partitioned: boolean }>(
    `SELECT $1::oid::regclass::text AS partition,
            (SELECT relkind = 'p' FROM pg_class WHERE oid = 'big."jobHistory"'::regclass) AS partitioned`,
    [oid],
  );
  expect({ partition, partitioned }).toEqual({
    partition: 'big."jobHistory_default"',
    partitioned: true,
  });
  // Only the upkeep reads it whole, never the migration: a validation per partition made, and the
  // builds of the indexes made on the parent alone (migration 16's), CONCURRENTLY: a scan to build
  // and one to validate each.
  const [{ made }] = await db.query<{ made: number }>(
    `SELECT count(*)::int AS made FROM pg_inherits WHERE inhparent = 'big."jobHistory"'::regclass`,
  );
  const parents = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE i.indrelid = 'big."jobHistory"'::regclass`,
  );
  const [{ built }] = await db.query<{ built: number }>(
    `SELECT count(*)::int AS built FROM pg_class
     WHERE relnamespace = 'big'::regnamespace AND relname = ANY($1)`,
    [parents.map((index) => childIndexName(index.name, 'jobHistory_default'))],
  );
  await waitFor('the statistics to be flushed', async () => (await seqRowsRead(oid)) > readBefore);
  expect(await seqRowsRead(oid)).toBeLessThanOrEqual(
    readBefore + (made - 1 + 2 * built) * (ROWS + 50_000),
  );

  // History reads and writes work: the old rows, and the writer's, by id, in their partitions.
  const [{ total }] = await db.query<{ total: number }>(
    `SELECT count(*)::int AS total FROM big."jobHistory"`,
  );
  expect(total).toBe(ROWS + writer.ids.length);
  const last = writer.ids[writer.ids.length - 1];
  const [row] = await db.query<{ state: string; partition: string }>(
    `SELECT state, tableoid::regclass::text AS partition FROM big."jobHistory" WHERE id = $1`,
    [last],
  );
  expect(row.state).toBe('completed');
  // The writer's ids are of the current interval, which its own rows (in the default partition
  // since the migration) keep from being made; the partitions after it were made.
  expect(row.partition).toBe('big."jobHistory_default"');
  expect(made).toBeGreaterThanOrEqual(2);
}, 300_000);
