import { randomBytes, randomUUID } from 'node:crypto';
import { RetentionService } from 'nestjs-pg-jobs';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { historyPartitionsSql } from '../../libs/jobs/src/history-partitions/history-partitions.sql.js';
import {
  idBound,
  PARTITION_LEAD_MS,
  partitionName,
  startOfName,
} from '../../libs/jobs/src/history-partitions/partition-range.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { recording } from '../support/recorder.js';
import { planNodes } from '../support/query-plan.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const HOUR = 3600;
const INTERVAL = 600;
const sql = historyPartitionsSql(toSchemaName('jobs'));

/** A job id of version 7 made at `ms`. */
function idAt(ms: number): string {
  const r = randomBytes(9).toString('hex');
  return `${idBound(ms).slice(0, 13)}-7${r.slice(0, 3)}-8${r.slice(3, 6)}-${r.slice(6, 18)}`;
}

async function partitionOf(id: string): Promise<string | undefined> {
  const [row] = await db.query<{ partition: string }>(
    `SELECT tableoid::regclass::text AS partition FROM jobs."jobHistory" WHERE id = $1`,
    [id],
  );
  return row?.partition;
}

async function attached(): Promise<string[]> {
  const rows = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'jobs."jobHistory"'::regclass ORDER BY 1`,
  );
  return rows.map((row) => row.name);
}

/** An ended (or running, when `endedAgo` is null) history row of id `id`. */
async function historyRow(id: string, state: string, endedAgo: number | null) {
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
     VALUES ($1, 'record', $2, 1, 0, now() - interval '3 hours', now() - interval '3 hours',
             CASE WHEN $3::float8 IS NULL THEN NULL ELSE now() - make_interval(secs => $3::float8) END)`,
    [id, state, endedAgo],
  );
}

/** A partition of the range [from, from + interval), made as the library makes one. */
async function makePartition(from: number, interval = INTERVAL * 1000) {
  const partition = { name: partitionName(from), from, to: from + interval };
  for (const statement of [
    sql.createTable(partition),
    sql.addElsewhere(partition),
    sql.validateElsewhere(partition),
    sql.attach(partition),
    sql.dropElsewhere(partition),
  ]) {
    await db.query(statement);
  }
  return partition;
}

let app: JobsApp;
let retention: RetentionService;
let now: number;
beforeAll(async () => {
  app = await startJobsApp(db.url, {
    ...recording('partitions'),
    options: { historyExpiration: HOUR, historyPartitionInterval: INTERVAL, scheduledCheck: 3600 },
  });
  retention = app.module.get(RetentionService);
  // Counts the rows each DELETE statement removes from any partition of history.
  await db.query(`
    CREATE TABLE public.deletes (n int);
    CREATE FUNCTION public.count_deletes() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO public.deletes (n) SELECT count(*) FROM gone; RETURN NULL; END $$;
  `);
  [{ now }] = await db.query<{ now: number }>(
    `SELECT floor(extract(epoch FROM now()) * 1000)::float8 AS now`,
  );
});
afterAll(() => app?.close());

it('makes partitions ahead at start, never covering the present, and a row is found in the partition of its id by one probe', async () => {
  // Ahead: two intervals and one scheduled check past the lead, from the first interval that starts
  // at least PARTITION_LEAD_MS from now (a job made now has the default partition: see
  // partition-range.ts).
  const interval = INTERVAL * 1000;
  const first = Math.ceil((now + PARTITION_LEAD_MS) / interval) * interval;
  const count = Math.ceil(
    (now + PARTITION_LEAD_MS + (2 * INTERVAL + 3600) * 1000 - first) / interval,
  );
  const expected = Array.from({ length: count }, (_, i) => partitionName(first + i * interval));
  await waitFor('the partitions ahead', async () => (await attached()).length > count);
  expect(await attached()).toEqual(['jobHistory_default', ...expected].sort());

  const { id } = await app.queue.addJob({ task: 'record', payload: {} });
  await waitFor('the job to run', async () => (await db.historyOf(id))?.state === 'completed');
  expect(await partitionOf(id)).toBe('jobs."jobHistory_default"');

  const later = idAt(first + 1);
  await historyRow(later, 'completed', 10);
  expect(await partitionOf(later)).toBe(`jobs."${partitionName(first)}"`);
  const nodes = await planNodes(db, `SELECT state FROM jobs."jobHistory" WHERE id = $1`, [later]);
  expect(nodes.filter((node) => node['Relation Name'])).toEqual([
    expect.objectContaining({ 'Node Type': 'Index Scan', 'Relation Name': partitionName(first) }),
  ]);
  await db.query(`DELETE FROM jobs."jobHistory" WHERE id = $1`, [later]);
});

it('records an id of no partition (version 4, or a time not covered) in the default partition', async () => {
  const old = randomUUID();
  await historyRow(old, 'completed', 10);
  const uncovered = idAt(now - 10 * HOUR * 1000);
  await historyRow(uncovered, 'active', null);
  expect(await partitionOf(old)).toBe('jobs."jobHistory_default"');
  expect(await partitionOf(uncovered)).toBe('jobs."jobHistory_default"');
  await db.query(`DELETE FROM jobs."jobHistory" WHERE id = ANY($1)`, [[old, uncovered]]);
});

describe('retention', () => {
  const at = (hoursAgo: number) =>
    Math.floor((now - hoursAgo * HOUR * 1000) / (INTERVAL * 1000)) * INTERVAL * 1000;

  beforeAll(async () => {
    for (const name of await attached()) {
      if (name !== 'jobHistory_default') {
        await db.query(`CREATE TRIGGER count_deletes AFTER DELETE ON jobs."${name}"
          REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.count_deletes()`);
      }
    }
  });

  it('drops a partition whose every job expired, deleting no row one by one', async () => {
    const partition = await makePartition(at(3));
    const ids = [idAt(partition.from + 1), idAt(partition.from + 2), idAt(partition.to - 1)];
    for (const id of ids) await historyRow(id, 'completed', 2 * HOUR);
    await db.query(`CREATE TRIGGER count_deletes AFTER DELETE ON jobs."${partition.name}"
      REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.count_deletes()`);

    await retention.pruneExpiredHistory({ lease: false });
    expect(await attached()).not.toContain(partition.name);
    const [{ tables }] = await db.query<{ tables: number }>(
      `SELECT count(*)::int AS tables FROM pg_class WHERE relname = $1`,
      [partition.name],
    );
    expect(tables).toBe(0);
    expect(await db.query('SELECT n FROM public.deletes')).toEqual([]);
  });

  it('keeps a partition with a running job or a queued retry, and deletes its expired rows in batches once overdue', async () => {
    // Due (all its ids older than the expiration) but not overdue: only waits.
    const due = await makePartition(at(1) - INTERVAL * 1000);
    const running = idAt(due.from + 1);
    await historyRow(running, 'active', null);
    await historyRow(idAt(due.from + 2), 'completed', 2 * HOUR);
    // Overdue: a retry of one of its jobs is queued.
    const overdue = await makePartition(at(4));
    const retried = idAt(overdue.from + 1);
    await historyRow(retried, 'failed', 2 * HOUR);
    await db.query(
      `INSERT INTO jobs.jobs (id, task, "maxRetries", "waitUntil") VALUES ($1, 'record', 3, now() + interval '1 day')`,
      [retried],
    );
    const expired = idAt(overdue.from + 2);
    await historyRow(expired, 'completed', 2 * HOUR);

    await retention.pruneExpiredHistory({ lease: false });
    expect(await attached()).toEqual(expect.arrayContaining([due.name, overdue.name]));
    expect(await partitionOf(running)).toBe(`jobs."${due.name}"`);
    expect(await db.historyOf(retried)).toMatchObject({ state: 'failed' });
    expect(await db.historyOf(expired)).toBeUndefined();

    // Once the retry ran and its end expired too, the partition goes whole.
    await db.query(`DELETE FROM jobs.jobs WHERE id = $1`, [retried]);
    await db.query(
      `UPDATE jobs."jobHistory" SET state = 'completed', "completedAt" = now() - interval '2 hours' WHERE id = ANY($1)`,
      [[retried, running]],
    );
    await retention.pruneExpiredHistory({ lease: false });
    expect(await attached()).not.toContain(overdue.name);
    expect(await attached()).not.toContain(due.name);
  });

  it('clears expired rows of the default partition from a range before making its partition, and leaves a range with rows to keep', async () => {
    const ahead = (await attached()).filter((name) => name !== 'jobHistory_default').sort();
    const next =
      Math.max(
        ...ahead.map((name) =>
          Date.parse(
            `${name.slice(11, 15)}-${name.slice(15, 17)}-${name.slice(17, 19)}T${name.slice(20, 22)}:${name.slice(22, 24)}:${name.slice(24, 26)}Z`,
          ),
        ),
      ) +
      INTERVAL * 1000;
    // An old version 4 id that happens to fall in the next range, expired; one in the range after, running.
    const expired = idAt(next + 5);
    await historyRow(expired, 'completed', 2 * HOUR);
    const kept = idAt(next + INTERVAL * 1000 + 5);
    await historyRow(kept, 'active', null);
    expect(await partitionOf(kept)).toBe('jobs."jobHistory_default"');

    const other = await startJobsApp(db.url, {
      ...recording('later'),
      // A longer scheduled check: partitions reach further ahead.
      options: {
        historyExpiration: HOUR,
        historyPartitionInterval: INTERVAL,
        scheduledCheck: 3600 + 2 * INTERVAL,
        runJobs: false,
      },
    });
    try {
      await other.module.get(RetentionService).pruneExpiredHistory({ lease: false });
      expect(await attached()).toContain(partitionName(next));
      expect(await attached()).not.toContain(partitionName(next + INTERVAL * 1000));
      expect(await db.historyOf(expired)).toBeUndefined();
      expect(await partitionOf(kept)).toBe('jobs."jobHistory_default"');
    } finally {
      await other.close();
      await db.query(`DELETE FROM jobs."jobHistory" WHERE id = $1`, [kept]);
    }
  });
});

it('makes partitions shorter than the lead minute, so that the next jobs have one', async () => {
  const short = await startJobsApp(db.url, {
    ...recording('short'),
    options: { schema: 'short', historyPartitionInterval: 15, scheduledCheck: 2 },
  });
  try {
    const made = async () =>
      (
        await db.query<{ from: string }>(
          `SELECT c.relname AS from FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
           WHERE i.inhparent = 'short."jobHistory"'::regclass AND c.relname <> 'jobHistory_default'
           ORDER BY 1`,
        )
      ).map((row) => startOfName(row.from));
    // Past the lead minute: two intervals and a round, and every interval up to them.
    await waitFor('the partitions ahead', async () => {
      const starts = await made();
      return (
        starts.length > 0 && starts[starts.length - 1] + 15_000 >= Date.now() + 60_000 + 32_000
      );
    });
    const starts = await made();
    expect(starts.every((start, i) => i === 0 || start - starts[i - 1] === 15_000)).toBe(true);
  } finally {
    await short.close();
  }
});

it('makes no partition with historyPartitionInterval 0: history stays one table, pruned in batches', async () => {
  const tiny = await startJobsApp(db.url, {
    ...recording('tiny'),
    options: { schema: 'tiny', historyExpiration: HOUR, historyPartitionInterval: 0 },
  });
  try {
    const { id } = await tiny.queue.addJob({ task: 'record', payload: {} });
    await waitFor('the job to run', async () => {
      const [row] = await db.query<{ state: string; partition: string }>(
        `SELECT state, tableoid::regclass::text AS partition FROM tiny."jobHistory" WHERE id = $1`,
        [id],
      );
      return row?.state === 'completed' && row;
    });
    const partitions = await db.query<{ name: string; partition: string }>(
      `SELECT c.relname AS name, (SELECT tableoid::regclass::text FROM tiny."jobHistory" WHERE id = $1) AS partition
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'tiny."jobHistory"'::regclass`,
      [id],
    );
    expect(partitions).toEqual([
      { name: 'jobHistory_default', partition: 'tiny."jobHistory_default"' },
    ]);

    await db.query(
      `UPDATE tiny."jobHistory" SET "completedAt" = now() - interval '2 hours' WHERE id = $1`,
      [id],
    );
    // The round the app runs at start may still be going (it makes the error search index first),
    // and prune the row before this one does: what counts is that it goes.
    await tiny.module.get(RetentionService).pruneExpiredHistory({ lease: false });
    expect(await db.query(`SELECT id FROM tiny."jobHistory" WHERE id = $1`, [id])).toEqual([]);
  } finally {
    await tiny.close();
  }
});
