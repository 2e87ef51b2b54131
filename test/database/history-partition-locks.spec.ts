import pg from 'pg';
import { RetentionService } from 'nestjs-pg-jobs';
import { PARTITION_LEAD_MS } from '../../libs/jobs/src/history-partitions/partition-range.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { recording } from '../support/recorder.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

let app: JobsApp;
const INTERVAL = 600;
const CHECK = 3600;
beforeAll(async () => {
  const now = Date.now();
  app = await startJobsApp(db.url, {
    ...recording('partition-locks'),
    // A lock timeout far longer than the test: the upkeep must give way on its own.
    options: {
      historyExpiration: 3600,
      historyPartitionInterval: INTERVAL,
      scheduledCheck: CHECK,
      migrationTableLockTimeout: 120,
    },
  });
  // The boot's round has made the partitions ahead (as history-partitions.spec.ts counts them).
  const first = Math.ceil((now + PARTITION_LEAD_MS) / (INTERVAL * 1000)) * INTERVAL * 1000;
  const count = Math.ceil(
    (now + PARTITION_LEAD_MS + (2 * INTERVAL + CHECK) * 1000 - first) / (INTERVAL * 1000),
  );
  await waitFor('the partitions ahead', async () => (await attached()).length > count);
}, 60_000);

afterAll(() => app?.close());

async function attached(): Promise<string[]> {
  const rows = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'jobs."jobHistory"'::regclass ORDER BY 1`,
  );
  return rows.map((row) => row.name);
}

it('gives way, within a quarter of deadlock_timeout, to a transaction reading history, and makes the partition once it ends', async () => {
  const before = await attached();
  const newest = before[before.length - 2]; // the last time partition (jobHistory_default sorts after)
  // The partition furthest ahead is gone: the next round makes it again.
  await db.query(`ALTER TABLE jobs."jobHistory" DETACH PARTITION jobs."${newest}"`);
  await db.query(`DROP TABLE jobs."${newest}"`);

  // A reader's transaction holds the default partition (as a transactional task's does).
  const reader = new pg.Client({ connectionString: db.url });
  await reader.connect();
  await reader.query('BEGIN');
  await reader.query('SELECT count(*) FROM jobs."jobHistory"');

  // The round needs an ACCESS EXCLUSIVE lock on the default partition to make the partition. It
  // must not queue for it (every later statement on history would queue behind it) for longer
  // than a quarter of deadlock_timeout: the round ends while the reader still holds its lock.
  await app.module.get(RetentionService).pruneExpiredHistory({ lease: false });
  expect(await attached()).not.toContain(newest);
  await reader.query('SELECT count(*) FROM jobs."jobHistory"');
  await reader.query('COMMIT');
  await reader.end();

  await app.module.get(RetentionService).pruneExpiredHistory({ lease: false });
  expect(await attached()).toEqual(before);
}, 30_000);
