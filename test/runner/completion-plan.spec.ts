import { runnerSql } from '../../libs/jobs/src/runner/runner.sql.js';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { startJobsApp } from '../support/jobs-app.js';
import { recording } from '../support/recorder.js';
import { planNodes } from '../support/query-plan.js';
import type { PlanNode } from '../support/query-plan.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

/**
 * The plan a prepared statement settles on once PostgreSQL chooses its generic plan (after five
 * executions, when the generic plan's estimate is no worse): the one every completion then runs.
 */
const genericPlan = (text: string, values: unknown[]): Promise<PlanNode[]> =>
  planNodes(db, text, values, 'SET LOCAL plan_cache_mode = force_generic_plan');

beforeAll(async () => {
  // A history of ended jobs and a few running ones, analysed.
  const app = await startJobsApp(db.url, { ...recording('filler'), options: { runJobs: false } });
  await app.close();
  await db.query(`
    INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt",
                                   "completedAt", "claimToken")
    SELECT gen_random_uuid(), 'record', CASE WHEN i % 1000 = 0 THEN 'active' ELSE 'completed' END,
           1, 0, now(), now(), CASE WHEN i % 1000 = 0 THEN NULL ELSE now() END, i
    FROM generate_series(1, 20000) i`);
  await db.query('ANALYZE jobs."jobHistory"');
});

const sql = runnerSql(toSchemaName('jobs'));
const fence = (i: number) => ({
  id: `01890000-0000-7000-8000-${String(i).padStart(12, '0')}`,
  attempt: 1,
  claim: String(i),
});
const batch = Array.from({ length: 50 }, (_, i) => ({ job: fence(i) }));

/** Each write that ends (or reports on) an attempt, with values as the runner binds them. */
const endings: [string, string, unknown[]][] = [
  [
    'complete',
    sql.complete.text,
    sql.complete.values({
      completions: batch.map((a) => ({ ...a, result: null })),
      channel: 'jobs_scheduler',
    }),
  ],
  [
    'completeInFlow',
    sql.completeInFlow.text,
    sql.completeInFlow.values({
      completions: batch.map((a) => ({ ...a, result: null })),
      channel: 'jobs_scheduler',
    }),
  ],
  [
    'fail',
    sql.fail.text,
    sql.fail.values({
      ...fence(1),
      channel: 'jobs_scheduler',
      error: 'e',
      retryBackoff: 1,
      requeuedBy: 'i',
      maxRetryDelay: 60,
      giveUp: false,
      notification: '{}',
      stack: 'Error: e\n    at run',
    }),
  ],
  ['snooze', sql.snooze.text, sql.snooze.values({ ...fence(1), seconds: 1, requeuedBy: 'i' })],
  [
    'progress',
    sql.progress.text,
    sql.progress.values({ ...fence(1), progress: '1', channel: 'c', notification: '{}' }),
  ],
  ['release', sql.release.text, sql.release.values({ attempts: batch, reason: 'r' })],
];

it.each(endings)(
  '%s finds its attempts by primary key, never by walking the index of active attempts',
  async (_name, text, values) => {
    const nodes = await genericPlan(text, values);
    const history = nodes.filter(
      (node) =>
        node['Relation Name']?.startsWith('jobHistory') && node['Node Type'] !== 'ModifyTable',
    );
    expect(history.length).toBeGreaterThan(0);
    expect(history.map((node) => [node['Node Type'], node['Index Name']])).toEqual(
      history.map(() => ['Index Scan', expect.stringMatching(/pkey/)]),
    );
  },
);
