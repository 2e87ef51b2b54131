import { runnerSql } from '../../libs/jobs/src/runner/runner.sql.js';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { startJobsApp } from '../support/jobs-app.js';
import { recording } from '../support/recorder.js';
import { planNodes, planOfClaim } from '../support/query-plan.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

it('claims by walking the claim-order index even when the queue was never analysed', async () => {
  const producer = await startJobsApp(db.url, {
    ...recording('producer'),
    options: { runJobs: false },
  });
  // What a fresh install sees during its first burst: statistics that say the table is empty.
  await db.query('ALTER TABLE jobs.jobs SET (autovacuum_enabled = false)');
  for (let i = 0; i < 10; i++)
    await producer.queue.addJobs(Array.from({ length: 500 }, () => ({ task: 'record' })));
  await producer.close();
  const [{ analysed }] = await db.query<{ analysed: boolean }>(
    `SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL AS analysed
     FROM pg_stat_user_tables WHERE schemaname = 'jobs' AND relname = 'jobs'`,
  );
  expect(analysed).toBe(false);

  // Parameters bound, as the runner sends them: the planner sees the actual limit and tasks.
  const all = await planOfClaim(db);
  // The claim's subquery walks jobs_claim_order in order and stops at the limit (the delete then
  // goes to the claimed rows by ctid): nothing reads, or sorts, the whole queue.
  expect(all.filter((node) => node['Index Name'] === 'jobs_claim_order')).toEqual([
    expect.objectContaining({ 'Node Type': 'Index Scan' }),
  ]);
  expect(
    all.filter((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'jobs'),
  ).toEqual([]);
});

it.each([
  ['claimLimited', undefined],
  ['claimLimitedByGroup', 2],
] as const)(
  "claims a limited queue's jobs (%s) by walking the claim-order index on a never-analysed queue",
  async (statement, groupConcurrency) => {
    const sql = runnerSql(toSchemaName('jobs'));
    // The queue holds the 5000 never-analysed jobs of the first test.
    const [{ queued }] = await db.query<{ queued: number }>(
      `SELECT count(*)::int AS queued FROM jobs.jobs WHERE task = 'record'`,
    );
    expect(queued).toBe(5000);
    const all = await planNodes(
      db,
      sql[statement].text,
      sql[statement].values({
        limit: 50,
        executedBy: 'planner-test',
        tasks: ['record'],
        queue: 'limited',
        globalConcurrency: 4,
        rateLimit: { limit: 100, periodSeconds: 60 },
        groupConcurrency,
      }),
    );
    expect(all.filter((node) => node['Index Name'] === 'jobs_claim_order')).toEqual([
      expect.objectContaining({ 'Node Type': 'Index Scan' }),
    ]);
    expect(
      all.filter((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'jobs'),
    ).toEqual([]);
  },
);

it('judges missed cron jobs row by row on the slot indexes, never by a pass over every slot', async () => {
  // A runOnce schedule with a long past, each of its jobs past its startBy: the claim decides,
  // for each one, whether a later slot is missed too.
  await db.query(
    `INSERT INTO jobs."jobSchedule" (name, task, cron, "missedSlots")
     VALUES ('planCheck', 'record', '* * * * * *', 'runOnce')`,
  );
  await db.query(
    `INSERT INTO jobs."jobScheduleSlot" (schedule, slot, "jobId")
     SELECT 'planCheck', now() - g * interval '1 second', gen_random_uuid() FROM generate_series(1, 5000) g`,
  );
  await db.query(
    `INSERT INTO jobs.jobs (id, task, "waitUntil", "startBy", "maxRetries", "isScheduled")
     SELECT "jobId", 'record', slot, slot + interval '1 minute', 0, true
     FROM jobs."jobScheduleSlot" WHERE schedule = 'planCheck'`,
  );
  await db.query('ANALYZE jobs."jobScheduleSlot"');

  const all = await planOfClaim(db);
  // An EXISTS here was planned as one hashed anti-join of all slots per claim (half a second).
  expect(
    all.filter(
      (node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'jobScheduleSlot',
    ),
  ).toEqual([]);
});
