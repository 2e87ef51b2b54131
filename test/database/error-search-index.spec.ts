import pg from 'pg';
import { RetentionService } from 'nestjs-pg-jobs';
import { adminSql } from '../../libs/jobs/src/admin/admin.sql.js';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { planNodes } from '../support/query-plan.js';
import { useTestDatabase } from '../support/test-database.js';
import type { TestDatabase } from '../support/test-database.js';

const HOUR = 3600;
/** Partitions of ten minutes: history has several, and the default partition. */
const options = { historyExpiration: HOUR, historyPartitionInterval: 600, scheduledCheck: 3600 };

/** Each partition of history, with the name of its part of the error search index (or null). */
function parts(db: TestDatabase) {
  return db.query<{ partition: string; part: string | null; valid: boolean | null }>(
    `SELECT c.relname AS partition, x.relname AS part, i.indisvalid AS valid
     FROM pg_inherits p JOIN pg_class c ON c.oid = p.inhrelid
     LEFT JOIN (pg_inherits xp JOIN pg_class x ON x.oid = xp.inhrelid JOIN pg_index i ON i.indexrelid = x.oid)
       ON xp.inhparent = to_regclass('jobs.job_history_error_trgm') AND i.indrelid = c.oid
     WHERE p.inhparent = 'jobs."jobHistory"'::regclass
     ORDER BY 1`,
  );
}

const sql = adminSql(toSchemaName('jobs'));
/**
 * The admin API's search of failed jobs by `text` in their errors, first page: the search's values
 * (`searchValues`: task, queue, groupKey, after, before, error, uniqueKey, id range, flow), then the
 * state, the page and no cursor.
 */
const searchFailed = (text: string) => [
  null,
  null,
  null,
  null,
  null,
  `%${text}%`,
  null,
  null,
  null,
  null,
  'failed',
  51,
  0,
  null,
  null,
];

/** Failed jobs of the last minutes: many with common errors, three with a rare one. */
async function failedHistory(db: TestDatabase) {
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt",
                                    "completedAt", "lastErrorMessage")
     SELECT gen_random_uuid(), 'task', 'failed', 1, 0, t, t, t,
            CASE WHEN i % 4000 = 0 THEN 'quota exceeded for tenant ' || i
                 ELSE 'connect ECONNREFUSED 10.0.0.' || (i % 256) || ':5432' END
     FROM generate_series(1, 12000) AS i, LATERAL (SELECT now() - make_interval(secs => i / 100.0)) AS x(t)`,
  );
  await db.query('VACUUM ANALYZE jobs."jobHistory"');
}

describe('with pg_trgm to be had', () => {
  const db = useTestDatabase();
  let app: JobsApp;
  beforeAll(async () => {
    app = await startJobsApp(db.url, { options });
    // This round may meet the one the app runs at start (a step one of them fails is the next
    // round's): rounds until one finds the work done.
    await waitFor('a round that finds every partition indexed', async () => {
      await app.module.get(RetentionService).pruneExpiredHistory({ lease: false });
      return (await parts(db)).every((p) => p.part && p.valid);
    });
  });

  it('builds the index on every partition of history, and the partitions made later have it', async () => {
    const before = await parts(db);
    expect(before.length).toBeGreaterThan(1);
    expect(before.filter((p) => !p.part || !p.valid)).toEqual([]);
    const [parent] = await db.query<{ valid: boolean }>(
      `SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = 'jobs.job_history_error_trgm'::regclass`,
    );
    expect(parent.valid).toBe(true);

    // A partition the next round makes (its range ahead of the clock) gets its part by the attach.
    const [{ latest }] = await db.query<{ latest: string }>(
      `SELECT max(c.relname) AS latest FROM pg_inherits p JOIN pg_class c ON c.oid = p.inhrelid
       WHERE p.inhparent = 'jobs."jobHistory"'::regclass AND c.relname <> 'jobHistory_default'`,
    );
    await db.query(`ALTER TABLE jobs."jobHistory" DETACH PARTITION jobs."${latest}"`);
    await db.query(`DROP TABLE jobs."${latest}"`);
    await app.module.get(RetentionService).pruneExpiredHistory({ lease: false });
    const after = await parts(db);
    // The partition dropped, or the next one when the clock crossed a bound meanwhile: a round makes
    // none that starts sooner than its lead ahead of the clock (partition-range.ts), and the rows of
    // such a gap go to the default partition.
    const remade = after
      .map((p) => p.partition)
      .filter((name) => name >= latest && name !== 'jobHistory_default');
    expect(remade).not.toEqual([]);
    expect(after.filter((p) => !p.part || !p.valid)).toEqual([]);
  });

  it('once made, keeps it without a lock on history: a transaction writing history holds no round up', async () => {
    const writer = new pg.Client({ connectionString: db.url });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(
        `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt")
         VALUES (gen_random_uuid(), 'task', 'active', 1, 0, now())`,
      );
      await app.module.get(RetentionService).pruneExpiredHistory({ lease: false });
      const warnings = (globalThis as { __jobsWarnings?: string[] }).__jobsWarnings ?? [];
      expect(warnings.filter((w) => w.includes('error search index'))).toEqual([]);
    } finally {
      await writer.query('ROLLBACK');
      await writer.end();
    }
  });

  it('makes a search by an error text few jobs have an index look-up', async () => {
    await failedHistory(db);
    const nodes = await planNodes(db, sql.listEnded, searchFailed('quota exceeded'));
    expect(
      nodes.filter((node) => /^job_history_error_trgm_/.test(node['Index Name'] ?? '')),
    ).not.toEqual([]);
    expect(await db.query(sql.listEnded, searchFailed('quota exceeded'))).toHaveLength(3);
  });
});

describe('with a role that may not install pg_trgm', () => {
  const db = useTestDatabase();
  const role = `jobs_no_extension_${process.pid}`;
  let url: string;
  beforeAll(async () => {
    await db.query(`CREATE ROLE ${role} LOGIN PASSWORD '${role}'`);
    const [{ name }] = await db.query<{ name: string }>('SELECT current_database() AS name');
    // The role makes the schema (it owns every table), then loses the right to create in the
    // database, which installing an extension needs.
    await db.query(`GRANT CREATE ON DATABASE "${name}" TO ${role}`);
    const asRole = new URL(db.url);
    asRole.username = role;
    asRole.password = role;
    url = asRole.toString();
    const migrating = await startJobsApp(url, { options: { ...options, errorSearchIndex: false } });
    await migrating.close();
    await db.query(`REVOKE CREATE ON DATABASE "${name}" FROM ${role}`);
  });
  // After the database is dropped (`useTestDatabase`'s hook runs first), the role owns nothing.
  afterAll(async () => {
    const server = new pg.Client({ connectionString: process.env.JOBS_TEST_SERVER_URL });
    await server.connect();
    try {
      await server.query(`DROP ROLE IF EXISTS ${role}`);
    } finally {
      await server.end();
    }
  });

  it('says once that the index is not built, and searches work without it', async () => {
    const app = await startJobsApp(url, { options });
    const retention = app.module.get(RetentionService);
    // Two rounds besides the one at start: the warning is still said once.
    await retention.pruneExpiredHistory({ lease: false });
    await retention.pruneExpiredHistory({ lease: false });
    const warnings = (globalThis as { __jobsWarnings?: string[] }).__jobsWarnings ?? [];
    expect(
      warnings.filter((w) => w.includes('pg_trgm extension cannot be installed')),
    ).toHaveLength(1);
    expect((await parts(db)).filter((p) => p.part)).toEqual([]);
    await failedHistory(db);
    expect(await db.query(sql.listEnded, searchFailed('quota exceeded'))).toHaveLength(3);
    await app.close();
  });
});
