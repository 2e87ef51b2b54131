import { adminSql } from '../../libs/jobs/src/admin/admin.sql.js';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { HistoryPartitions } from '../../libs/jobs/src/history-partitions/history-partitions.js';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { metricsSql } from '../../libs/jobs/src/metrics/metrics.sql.js';
import { minuteStatsSql } from '../../libs/jobs/src/minute-stats/minute-stats.sql.js';
import { resolveJobsOptions } from '../../libs/jobs/src/options/resolve-options.js';
import { SchemaMigrator } from '../../libs/jobs/src/schema/schema-migrator.js';
import { executedPlanNodes, planNodes, withParentNames } from '../support/query-plan.js';
import type { PlanNode } from '../support/query-plan.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const HISTORY_ROWS = 200_000;

async function plan(text: string, values: unknown[]): Promise<PlanNode[]> {
  return withParentNames(await planNodes(db, text, values));
}

beforeAll(async () => {
  const options = resolveJobsOptions({ connection: db.url, schema: 'jobs' });
  const database = await JobsDatabase.connect(options);
  try {
    await new SchemaMigrator(database).migrate();
    // The history indexes a migration made ON ONLY the parent, built on the default partition as
    // an instance's partition upkeep does.
    await new HistoryPartitions(options, database, {
      log: () => {},
      warn: () => {},
    }).completeIndexes();
  } finally {
    await database.close();
  }
  // A day of history of a busy fleet: mostly completed, some failed (every one with the same
  // error) and cancelled, a few running; and a queue of a thousand jobs just added.
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt",
                                    "lastErrorMessage")
     SELECT gen_random_uuid(), 'task' || (i % 20), s.state, 1, 0, t.at, t.at,
            CASE WHEN s.state = 'active' THEN NULL ELSE t.at END,
            CASE WHEN s.state = 'failed' THEN 'connect ECONNREFUSED 10.0.0.' || (i % 256) END
     FROM generate_series(1, $1) AS i,
          LATERAL (SELECT now() - make_interval(secs => (i * 86400.0 / $1)) AS at) AS t,
          LATERAL (SELECT CASE WHEN i % 5000 = 0 THEN 'active' WHEN i % 50 = 1 THEN 'failed'
                               WHEN i % 97 = 2 THEN 'cancelled' ELSE 'completed' END AS state) AS s`,
    [HISTORY_ROWS],
  );
  await db.query(
    `INSERT INTO jobs.jobs (id, task, "maxRetries", "waitUntil", "queuedAgain")
     SELECT gen_random_uuid(), 'task' || (i % 20), 0, now() + make_interval(secs => i), false
     FROM generate_series(1, 1000) AS i`,
  );
  // Ten jobs waiting for their retry: queued again, their failed attempt in history.
  await db.query(
    `WITH failed AS (
       INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt",
                                      "completedAt", "lastErrorMessage")
       SELECT gen_random_uuid(), 'task1', 'failed', 1, 3, now(), now(), now(), 'connect ECONNREFUSED 10.0.0.9'
       FROM generate_series(1, 10)
       RETURNING id
     )
     INSERT INTO jobs.jobs (id, task, retries, "maxRetries", "waitUntil", "queuedAgain")
     SELECT id, 'task1', 1, 3, now() + interval '1 minute', true FROM failed`,
  );
  // A job of ten in history was added with a unique key, and a job of ten in the queue holds one.
  await db.query(
    `UPDATE jobs."jobHistory" SET "uniqueKey" = 'order:' || id WHERE get_byte(uuid_send(id), 15) < 26`,
  );
  await db.query(
    `UPDATE jobs.jobs SET "uniqueKey" = 'order:' || id WHERE get_byte(uuid_send(id), 15) < 26`,
  );
  // Two thousand flows of ten jobs each, over the same day.
  await db.query(
    `INSERT INTO jobs."jobFlow" (id, name, "createdAt")
     SELECT gen_random_uuid(), 'flow' || i, now() - make_interval(secs => i * 40) FROM generate_series(1, 2000) AS i`,
  );
  await db.query(
    `INSERT INTO jobs."jobFlowMember" ("jobId", "flowId", ref, position)
     SELECT h.id, f.id, 'job' || h.n, h.n % 10
     FROM (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM jobs."jobHistory" LIMIT 20000) AS h
     JOIN (SELECT id, row_number() OVER (ORDER BY "createdAt") - 1 AS n FROM jobs."jobFlow") AS f
       ON f.n = h.n / 10`,
  );
  // What autovacuum does to a table of this size: statistics and the visibility map.
  for (const table of ['"jobHistory"', 'jobs', '"jobFlow"', '"jobFlowMember"']) {
    await db.query(`VACUUM ANALYZE jobs.${table}`);
  }
});

const sql = adminSql(toSchemaName('jobs'));
const metrics = metricsSql(toSchemaName('jobs'));
const minuteStats = minuteStatsSql(toSchemaName('jobs'));
/** The minute before the current one, as the per-minute writer writes it. */
const lastMinute = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 60_000);
const PAGE = [51, 0];
const NO_CURSOR = [null, null];

/** The search's ten values ($1-$10, `searchValues`), any job but for the fields given. */
function search(fields: {
  task?: string;
  errorPattern?: string;
  uniqueKey?: string;
  idFrom?: string;
  idTo?: string;
}) {
  const { task = null, errorPattern = null, uniqueKey = null, idFrom = null, idTo = null } = fields;
  return [task, null, null, null, null, errorPattern, uniqueKey, idFrom, idTo, null];
}
const BY_KEY = search({ uniqueKey: 'order:00000000-0000-4000-8000-000000000000' });
const ANY = search({});
/** The first and last ids of the prefix "0193a4". */
const ID_FROM = '0193a400-0000-0000-0000-000000000000';
const ID_TO = '0193a4ff-ffff-ffff-ffff-ffffffffffff';

/** An index of "completedAt": the planner takes either for a window of it (both are ranges). */
const ENDED_AT = /^job_history_(state_)?ended_at$/;

/*
 * The dashboard polls these every 2 s (and the API serves the rest). Each must read history
 * through an index and stop at its page or its time window: a sequential scan of jobHistory is a
 * read of the whole history. Plans come from real statistics (no enable_seqscan tricks), with the
 * parameters bound as the service binds them.
 */
it.each([
  ['stats (ended in the last 60 minutes)', ENDED_AT, sql.stats, [60]],
  ['throughput (last 60 minutes)', ENDED_AT, sql.throughput, [60]],
  ['list of completed jobs', ENDED_AT, sql.listEnded, [...ANY, 'completed', ...PAGE, ...NO_CURSOR]],
  [
    'list of failed jobs',
    /^job_history_state_ended_at$/,
    sql.listEnded,
    [...ANY, 'failed', ...PAGE, ...NO_CURSOR],
  ],
  [
    'list of cancelled jobs of one task',
    /^job_history_state_ended_at$/,
    sql.listEnded,
    [...search({ task: 'task3' }), 'cancelled', ...PAGE, ...NO_CURSOR],
  ],
  [
    'list of interrupted jobs (none)',
    /^job_history_state_ended_at$/,
    sql.listEnded,
    [...ANY, 'interrupted', ...PAGE, ...NO_CURSOR],
  ],
  [
    'search of failed jobs by their error',
    /^job_history_state_ended_at$/,
    sql.listEnded,
    [...search({ errorPattern: '%printer%' }), 'failed', ...PAGE, ...NO_CURSOR],
  ],
  [
    'next page of failed jobs',
    /^job_history_state_ended_at$/,
    sql.listEnded,
    [
      ...ANY,
      'failed',
      ...PAGE,
      '2026-12-05 04:00:00.123456+00',
      '00000000-0000-4000-8000-000000000000',
    ],
  ],
  [
    'search of every job by an id prefix',
    /^jobHistory_pkey$/,
    sql.listAll,
    [...search({ idFrom: ID_FROM, idTo: ID_TO }), ...PAGE, ...NO_CURSOR],
  ],
  [
    'search of every job by its unique key',
    /^job_history_unique_key$/,
    sql.listAll,
    [...BY_KEY, ...PAGE, ...NO_CURSOR],
  ],
  [
    'search of completed jobs by their unique key',
    /^job_history_unique_key$/,
    sql.listEnded,
    [...BY_KEY, 'completed', ...PAGE, ...NO_CURSOR],
  ],
  [
    'search of pending jobs by their unique key',
    /^job_history_unique_key$/,
    sql.listPending,
    [...BY_KEY, 'pending', ...PAGE, null, null, null],
  ],
  [
    'count of every job by its unique key',
    /^job_history_unique_key$/,
    sql.countAll,
    [...BY_KEY, 10_001],
  ],
  ['list of running jobs', /^job_history_active$/, sql.listActive, [...ANY, ...PAGE, ...NO_CURSOR]],
  ['list of every job', /^job_history_ended_at$/, sql.listAll, [...ANY, ...PAGE, ...NO_CURSOR]],
  [
    'list of pending jobs',
    /^jobHistory_pkey$/,
    sql.listPending,
    [...ANY, 'pending', ...PAGE, null, null, null],
  ],
  [
    'list of blocked jobs',
    /^jobHistory_pkey$/,
    sql.listPending,
    [...ANY, 'blocked', ...PAGE, null, null, null],
  ],
  [
    'count of failed jobs by their error',
    /^job_history_state_ended_at$/,
    sql.countEnded,
    [...search({ errorPattern: '%printer%' }), 'failed', 10_001],
  ],
  ['list of flows', /^jobHistory_pkey$/, sql.listFlows, [21, 0]],
  ['one job', /^jobHistory_pkey$/, sql.history, ['00000000-0000-4000-8000-000000000000']],
  ['metrics: active jobs', /^job_history_active$/, metrics.active, []],
  [
    "the per-minute writer: a minute's endings",
    ENDED_AT,
    minuteStats.writeMinute.text,
    minuteStats.writeMinute.values({
      minute: lastMinute,
      writtenBy: 'a',
      queues: [],
      keepSeconds: 86_400,
    }),
  ],
  // No minute written: each minute of the day is read from history, one range each.
  ['durations over a day', ENDED_AT, minuteStats.durations, [1440]],
] as const)('%s reads history through %s, never all of it', async (_, index, text, values) => {
  const all = await plan(text, [...values]);
  expect(
    all.filter(
      (node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'jobHistory',
    ),
  ).toEqual([]);
  expect(all.filter((node) => index.test(node['Index Name'] ?? ''))).not.toEqual([]);
});

it("lists flows latest first from job_flow_created_at, reading only the page's flows", async () => {
  const all = await plan(sql.listFlows, [21, 0]);
  expect(all.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
  expect(all.filter((node) => node['Index Name'] === 'job_flow_created_at')).not.toEqual([]);
});

it('chooses a page of one state and task from the index alone, visiting only the rows shown', async () => {
  // task3 has no failed job in this history: the whole state is skipped through, never read.
  const all = await plan(sql.listEnded, [
    ...search({ task: 'task3' }),
    'failed',
    ...PAGE,
    ...NO_CURSOR,
  ]);
  expect(all.filter((node) => node['Index Name'] === 'job_history_state_ended_at')).toEqual([
    expect.objectContaining({ 'Node Type': 'Index Only Scan' }),
  ]);
});

it('walks a state to its page even when the queue holds more jobs than the state has rows', async () => {
  // 4,000 failed rows and, now, 11,000 queued jobs: an anti-join of history against the queue
  // would expect every failed row to be queued again, and read and sort the whole state.
  await db.query(
    `INSERT INTO jobs.jobs (id, task, "maxRetries", "waitUntil", "queuedAgain")
     SELECT gen_random_uuid(), 'task' || (i % 20), 0, now() + make_interval(secs => i), false
     FROM generate_series(1, 10000) AS i`,
  );
  await db.query('ANALYZE jobs.jobs');
  for (const values of [
    [...ANY, 'failed', ...PAGE, ...NO_CURSOR],
    [
      ...ANY,
      'failed',
      ...PAGE,
      '2026-12-05 04:00:00.123456+00',
      '00000000-0000-4000-8000-000000000000',
    ],
  ]) {
    const all = withParentNames(await executedPlanNodes(db, sql.listEnded, values));
    expect(all.filter((node) => /Anti Join/.test(node['Node Type']))).toEqual([]);
    // The one sort is the page's own.
    const sorted = all.filter((node) => node['Node Type'] === 'Sort');
    expect(sorted.map((node) => node['Actual Rows']! <= 51)).toEqual(sorted.map(() => true));
    const walked = all.filter((node) => node['Index Name'] === 'job_history_state_ended_at');
    expect(walked).toEqual([expect.objectContaining({ 'Actual Rows': expect.any(Number) })]);
    // The page's rows and a few more: never the state's 4,000.
    expect(walked[0]['Actual Rows']).toBeLessThanOrEqual(100);
  }
});

it('finds queued jobs by unique key through the queue’s key and primary key, never reading the queue', async () => {
  for (const [text, values] of [
    [sql.listPending, [...BY_KEY, 'pending', ...PAGE, null, null, null]],
    [sql.listAll, [...BY_KEY, ...PAGE, ...NO_CURSOR]],
    [sql.countPending, [...BY_KEY, 'pending', 10_001]],
  ] as const) {
    const all = await plan(text, [...values]);
    expect(
      all.filter((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'jobs'),
    ).toEqual([]);
    expect(all.filter((node) => node['Index Name'] === 'jobs_unique_key')).not.toEqual([]);
  }
});

it("finds queued jobs by error text through the jobs queued again, never matching history's failures against the queue", async () => {
  // 4,000 failed rows have the error, and ten jobs waiting for their retry: those ten are what
  // the queue's side of a search looks up in history, one primary-key probe each.
  const byError = search({ errorPattern: '%econnrefused%' });
  for (const [text, values] of [
    [sql.listPending, [...byError, 'pending', ...PAGE, null, null, null]],
    [sql.listAll, [...byError, ...PAGE, ...NO_CURSOR]],
    [sql.countPending, [...byError, 'pending', 10_001]],
    [sql.countAll, [...byError, 10_001]],
  ] as const) {
    const all = await executedPlanNodes(db, text, [...values]);
    const queueSide = all.filter((node) => node['Index Name'] === 'jobs_queued_again');
    expect(queueSide).toEqual([expect.objectContaining({ 'Actual Rows': 10 })]);
    // Every state's search also reads history's side, its failures included.
    if (text === sql.listAll || text === sql.countAll) continue;
    // Each read of history (the search's, the page's join) probes those ten alone.
    const historyReads = all
      .filter((node) => node['Relation Name']?.startsWith('jobHistory'))
      .map(
        (node) =>
          (node['Actual Rows']! + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops']!,
      );
    expect(historyReads.filter((rows) => rows > 10)).toEqual([]);
  }
  expect((await db.query(sql.countPending, [...byError, 'pending', 10_001]))[0]).toEqual({
    count: 10,
  });
});
