import { adminSql } from '../../libs/jobs/src/admin/admin.sql.js';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { metricsSql } from '../../libs/jobs/src/metrics/metrics.sql.js';
import { resolveJobsOptions } from '../../libs/jobs/src/options/resolve-options.js';
import { SchemaMigrator } from '../../libs/jobs/src/schema/schema-migrator.js';
import { planNodes, withParentNames } from '../support/query-plan.js';
import type { PlanNode } from '../support/query-plan.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const HISTORY_ROWS = 200_000;

async function plan(text: string, values: unknown[]): Promise<PlanNode[]> {
  return withParentNames(await planNodes(db, text, values));
}

beforeAll(async () => {
  const database = await JobsDatabase.connect(
    resolveJobsOptions({ connection: db.url, schema: 'jobs' }),
  );
  try {
    await new SchemaMigrator(database).migrate();
  } finally {
    await database.close();
  }
  // A day of history of a busy fleet: mostly completed, some failed and cancelled, a few running;
  // and a queue of a thousand jobs.
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
     SELECT gen_random_uuid(), 'task' || (i % 20), s.state, 1, 0, t.at, t.at,
            CASE WHEN s.state = 'active' THEN NULL ELSE t.at END
     FROM generate_series(1, $1) AS i,
          LATERAL (SELECT now() - make_interval(secs => (i * 86400.0 / $1)) AS at) AS t,
          LATERAL (SELECT CASE WHEN i % 5000 = 0 THEN 'active' WHEN i % 50 = 1 THEN 'failed'
                               WHEN i % 97 = 2 THEN 'cancelled' ELSE 'completed' END AS state) AS s`,
    [HISTORY_ROWS],
  );
  await db.query(
    `INSERT INTO jobs.jobs (id, task, "maxRetries", "waitUntil")
     SELECT gen_random_uuid(), 'task' || (i % 20), 0, now() + make_interval(secs => i)
     FROM generate_series(1, 1000) AS i`,
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
const PAGE = [51, 0];

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
  ['list of completed jobs', ENDED_AT, sql.listEnded, ['completed', null, ...PAGE]],
  ['list of failed jobs', /^job_history_state_ended_at$/, sql.listEnded, ['failed', null, ...PAGE]],
  [
    'list of cancelled jobs of one task',
    /^job_history_state_ended_at$/,
    sql.listEnded,
    ['cancelled', 'task3', ...PAGE],
  ],
  [
    'list of interrupted jobs (none)',
    /^job_history_state_ended_at$/,
    sql.listEnded,
    ['interrupted', null, ...PAGE],
  ],
  ['list of running jobs', /^job_history_active$/, sql.listActive, [null, ...PAGE]],
  ['list of every job', /^job_history_ended_at$/, sql.listAll, [null, ...PAGE]],
  ['list of pending jobs', /^jobHistory_pkey$/, sql.listPending, [null, ...PAGE, false]],
  ['list of blocked jobs', /^jobHistory_pkey$/, sql.listPending, [null, ...PAGE, true]],
  ['list of flows', /^jobHistory_pkey$/, sql.listFlows, [21, 0]],
  ['one job', /^jobHistory_pkey$/, sql.history, ['00000000-0000-4000-8000-000000000000']],
  ['metrics: active jobs', /^job_history_active$/, metrics.active, []],
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
  const all = await plan(sql.listEnded, ['failed', 'task3', ...PAGE]);
  expect(all.filter((node) => node['Index Name'] === 'job_history_state_ended_at')).toEqual([
    expect.objectContaining({ 'Node Type': 'Index Only Scan' }),
  ]);
});
