import { randomUUID } from 'node:crypto';
import { RetentionService } from 'nestjs-pg-jobs';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { PRUNE_BATCHES_BEFORE_WARNING } from '../../libs/jobs/src/retention/retention.service.js';
import { retentionSql } from '../../libs/jobs/src/retention/retention.sql.js';
import { quietLogger, startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { recording } from '../support/recorder.js';
import { planNodes } from '../support/query-plan.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const HOUR = 3600;

const warnings: string[] = [];
const warn = quietLogger.warn;
quietLogger.warn = (message: unknown, context?: unknown) => {
  warnings.push(String(message));
  return warn(message, context);
};

/** `count` completed history rows that ended from `endedAgo` seconds ago on, one a second older each. */
async function expiredRows(count: number, endedAgo: number): Promise<void> {
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
     SELECT gen_random_uuid(), 'record', 'completed', 1, 0, t, t, t
     FROM generate_series(1, $1::int) AS i, LATERAL (SELECT now() - make_interval(secs => $2 + i)) AS at(t)`,
    [count, endedAgo],
  );
}

/** A history row that ended `endedAgo` seconds ago (or is still running when `endedAgo` is null). */
async function historyRow(state: string, endedAgo: number | null, startedAgo = 2 * HOUR) {
  const id = randomUUID();
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
     VALUES ($1, 'record', $2, 1, 0, now() - make_interval(secs => $3), now() - make_interval(secs => $3),
             CASE WHEN $4::float8 IS NULL THEN NULL ELSE now() - make_interval(secs => $4::float8) END)`,
    [id, state, startedAgo, endedAgo],
  );
  return id;
}

async function remainingIds(): Promise<string[]> {
  const rows = await db.query<{ id: string }>(`SELECT id FROM jobs."jobHistory" ORDER BY id`);
  return rows.map((row) => row.id);
}

let app: JobsApp;
beforeAll(async () => {
  // No round of its own (an instance that runs no jobs prunes nothing by itself): the tests below
  // prune by hand and see every batch. A scheduled check far away was not enough: the first round
  // runs at start, and one that was late deleted nothing inside the first test, counted as a
  // statement of it ([0, 3, 3, 1], on CI).
  app = await startJobsApp(db.url, {
    ...recording('retention'),
    options: { historyExpiration: HOUR, historyPruneBatchSize: 3, runJobs: false },
  });
  // Records the number of rows each DELETE statement removed, in order.
  await db.query(`
    CREATE TABLE public.deletes (n int, at timestamptz DEFAULT clock_timestamp());
    CREATE FUNCTION public.count_deletes() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO public.deletes (n) SELECT count(*) FROM gone; RETURN NULL; END $$;
    CREATE TRIGGER count_deletes AFTER DELETE ON jobs."jobHistory_default"
      REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.count_deletes();
  `);
});
afterAll(() => app?.close());
beforeEach(() => db.query(`TRUNCATE jobs."jobHistory", jobs.jobs, public.deletes`));

it('deletes exactly the ended history older than historyExpiration, oldest first, at most a batch per statement', async () => {
  // Expired: 7 ended rows of every final state, from 8 h down to 2 h old.
  const expired: string[] = [];
  for (const [i, state] of ['completed', 'failed', 'cancelled', 'interrupted'].entries()) {
    expired.push(await historyRow(state, (8 - i) * HOUR));
  }
  for (const hours of [4, 3, 2]) expired.push(await historyRow('completed', hours * HOUR));
  // Kept: recent endings, a running job, and a failed attempt whose retry is queued.
  const kept = [
    await historyRow('completed', HOUR - 60),
    await historyRow('failed', 10),
    await historyRow('active', null, 5 * HOUR),
  ];
  const retrying = await historyRow('failed', 5 * HOUR);
  await db.query(
    `INSERT INTO jobs.jobs (id, task, "maxRetries", retries) VALUES ($1, 'record', 3, 1)`,
    [retrying],
  );
  kept.push(retrying);
  const retention = app.module.get(RetentionService);

  expect(await retention.pruneBatch()).toBe(3);
  expect(await remainingIds()).toEqual([...expired.slice(3), ...kept].sort());

  expect(await retention.pruneExpiredHistory()).toBe(4);
  expect(await remainingIds()).toEqual([...kept].sort());
  const statements = await db.query<{ n: number }>(`SELECT n FROM public.deletes ORDER BY at`);
  expect(statements.map((row) => row.n)).toEqual([3, 3, 1]);

  expect(await retention.pruneExpiredHistory()).toBe(0);
});

it('prunes on the scheduled check without being asked', async () => {
  const other = await startJobsApp(db.url, {
    ...recording('ticking'),
    options: { historyExpiration: HOUR, historyPruneBatchSize: 2, scheduledCheck: 0.2 },
  });
  try {
    const old = [await historyRow('completed', 2 * HOUR), await historyRow('failed', 3 * HOUR)];
    old.push(await historyRow('cancelled', 4 * HOUR));
    const fresh = await historyRow('completed', 60);
    await waitFor('the expired rows to be pruned', async () => {
      const ids = await remainingIds();
      return ids.length === 1 && ids;
    });
    expect(await remainingIds()).toEqual([fresh]);
  } finally {
    await other.close();
  }
});

it('keeps everything with historyExpiration 0', async () => {
  const other = await startJobsApp(db.url, {
    ...recording('forever'),
    options: { historyExpiration: 0, runJobs: false },
  });
  try {
    const id = await historyRow('completed', 100 * HOUR);
    expect(await other.module.get(RetentionService).pruneExpiredHistory()).toBe(0);
    expect(await remainingIds()).toEqual([id]);
  } finally {
    await other.close();
  }
});

it('goes on while expired rows remain, past 100 batches, yielding between them, and says it falls behind', async () => {
  // Three rows a batch (historyPruneBatchSize): more than a hundred batches' worth has expired.
  const backlog = 3 * PRUNE_BATCHES_BEFORE_WARNING + 5;
  await expiredRows(backlog, 2 * HOUR);
  const fresh = await historyRow('completed', 60);
  warnings.length = 0;

  expect(await app.module.get(RetentionService).pruneExpiredHistory()).toBe(backlog);
  expect(await remainingIds()).toEqual([fresh]);
  const [{ statements }] = await db.query<{ statements: number }>(
    'SELECT count(*)::int AS statements FROM public.deletes',
  );
  expect(statements).toBe(PRUNE_BATCHES_BEFORE_WARNING + 2);
  expect(warnings.filter((w) => w.startsWith('Pruning job history is falling behind'))).toEqual([
    expect.stringContaining(
      `${3 * PRUNE_BATCHES_BEFORE_WARNING} expired row(s) deleted in 100 batches`,
    ),
  ]);
});

it('does not warn when a round keeps up', async () => {
  await expiredRows(3 * 10, 2 * HOUR);
  warnings.length = 0;
  expect(await app.module.get(RetentionService).pruneExpiredHistory()).toBe(30);
  expect(warnings.filter((w) => w.includes('falling behind'))).toEqual([]);
});

it('deletes a batch by walking the end-time index from its oldest end, even on a history whose statistics say it is empty', async () => {
  // What a busy install sees until autovacuum analyses: statistics of a table far smaller.
  await db.query('ALTER TABLE jobs."jobHistory_default" SET (autovacuum_enabled = false)');
  try {
    await db.query('ANALYZE jobs."jobHistory_default"');
    await expiredRows(30_000, 2 * HOUR);
    const { pruneBatch, prunePlan } = retentionSql(toSchemaName('jobs'));
    const nodes = await planNodes(db, pruneBatch('jobHistory_default'), [HOUR, 1000], prunePlan);
    expect(nodes.filter((node) => node['Relation Name'] === 'jobHistory_default')).toContainEqual(
      expect.objectContaining({
        'Node Type': 'Index Scan',
        'Index Name': 'job_history_ended_at_default',
      }),
    );
    // Nothing collects, or sorts, every expired row for each batch.
    const types = nodes.map((node) => node['Node Type']);
    expect(types).not.toContain('Sort');
    expect(types).not.toContain('Bitmap Heap Scan');
  } finally {
    await db.query('ALTER TABLE jobs."jobHistory_default" RESET (autovacuum_enabled)');
  }
});
