import { randomUUID } from 'node:crypto';
import { RetentionService } from 'nestjs-pg-jobs';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { idBound } from '../../libs/jobs/src/history-partitions/partition-range.js';
import { retentionSql } from '../../libs/jobs/src/retention/retention.sql.js';
import { startJobsApp } from '../support/jobs-app.js';
import { executedPlanNodes } from '../support/query-plan.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const HOUR = 3600;
let app: JobsApp;

beforeAll(async () => {
  // Runs no jobs, so no round of its own: the test prunes by hand.
  app = await startJobsApp(db.url, {
    options: { historyExpiration: HOUR, runJobs: false, allowUnknownTasks: true },
  });
});

/** A job id made `secondsAgo` ago: its first 48 bits the time, as the library's ids. */
const idMadeAgo = (secondsAgo: number) =>
  idBound(Date.now() - secondsAgo * 1000).slice(0, 14) + randomUUID().slice(14);

/**
 * A job's history row that ended `endedAgo` seconds ago, with one step checkpoint and one failed
 * attempt before its last; its id.
 */
async function endedJobWithStep(endedAgo: number): Promise<string> {
  const [{ id }] = await db.query<{ id: string }>(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
     VALUES ($2, 'stepped', 'completed', 1, 0, now() - make_interval(secs => $1 + 60),
             now() - make_interval(secs => $1 + 60), now() - make_interval(secs => $1))
     RETURNING id`,
    [endedAgo, idMadeAgo(endedAgo + 60)],
  );
  await db.query(
    `INSERT INTO jobs."jobStep" ("jobId", name, position, state, "startedAt", "endedAt", attempt)
     VALUES ($1, 'load', 0, 'completed', now(), now(), 1)`,
    [id],
  );
  await db.query(
    `INSERT INTO jobs."jobAttempt" ("jobId", "startedAt", attempt, outcome, "endedAt", error)
     VALUES ($1, now(), 1, 'failed', now(), 'e')`,
    [id],
  );
  return id;
}

it("deletes a job's steps and failed attempts with its history, old events, and the waits of jobs no longer suspended", async () => {
  const expired = await endedJobWithStep(2 * HOUR);
  const recent = await endedJobWithStep(60);
  // A suspended job: queued, with its wait on an event and a step of its own.
  const { id: suspended } = await app.queue.addJob({ task: 'stepped' });
  await db.query(
    `UPDATE jobs.jobs SET "waitingFor" = '{"event": "go", "until": null}' WHERE id = $1`,
    [suspended],
  );
  await db.query(
    `INSERT INTO jobs."jobStep" ("jobId", name, position, state, "startedAt", attempt)
     VALUES ($1, '#event:go', 0, 'running', now(), 1)`,
    [suspended],
  );
  await db.query(
    `INSERT INTO jobs."jobEventWait" (event, "jobId") VALUES ('go', $1), ('gone', gen_random_uuid())`,
    [suspended],
  );
  await db.query(
    `INSERT INTO jobs."jobEvent" (name, "createdAt") VALUES ('old', now() - interval '2 hours'), ('new', now())`,
  );

  await app.module.get(RetentionService).pruneExpiredHistory({ lease: false });

  const stepsOf = await db.query<{ jobId: string }>(
    `SELECT "jobId" FROM jobs."jobStep" ORDER BY "jobId"`,
  );
  expect(stepsOf.map((row) => row.jobId).sort()).toEqual([recent, suspended].sort());
  expect(stepsOf.map((row) => row.jobId)).not.toContain(expired);
  const attemptsOf = await db.query<{ jobId: string }>(`SELECT "jobId" FROM jobs."jobAttempt"`);
  expect(attemptsOf.map((row) => row.jobId)).toEqual([recent]);
  expect(await db.query(`SELECT event FROM jobs."jobEventWait"`)).toEqual([{ event: 'go' }]);
  expect(await db.query(`SELECT name FROM jobs."jobEvent"`)).toEqual([{ name: 'new' }]);
});

it('finds the checkpoints of expired jobs without visiting those of the jobs it keeps', async () => {
  // 2,000 kept jobs of the last minutes, with a checkpoint each, and one expired job.
  await db.query(
    `WITH kept AS (
       INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
       SELECT id::uuid, 'stepped', 'completed', 1, 0, now(), now(), now() FROM unnest($1::text[]) AS t(id)
       RETURNING id
     )
     INSERT INTO jobs."jobStep" ("jobId", name, position, state, "startedAt", "endedAt", attempt)
     SELECT id, 'load', 0, 'completed', now(), now(), 1 FROM kept`,
    [Array.from({ length: 2000 }, (_, i) => idMadeAgo(600 - i * 0.1))],
  );
  const expired = await endedJobWithStep(2 * HOUR);
  await db.query(`DELETE FROM jobs."jobHistory" WHERE id = $1`, [expired]);
  await db.query(`ANALYZE jobs."jobStep"`);

  const { pruneJobRecords } = retentionSql(toSchemaName('jobs'));
  const plan = await executedPlanNodes(db, pruneJobRecords, [
    HOUR,
    1000,
    idBound(Date.now() - HOUR * 1000),
  ]);
  // The checkpoints each scan of jobStep read, kept or not: the orphans' search and the delete.
  const visited = plan
    .filter((node) => node['Relation Name'] === 'jobStep' && node['Node Type'] !== 'Delete')
    .map(
      (node) =>
        (node['Actual Rows']! + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops']!,
    );
  expect(Math.max(...visited)).toBeLessThanOrEqual(1);

  // The explained run was rolled back; the service's round deletes the expired checkpoint.
  await app.module.get(RetentionService).pruneExpiredHistory({ lease: false });
  expect(await db.query(`SELECT 1 FROM jobs."jobStep" WHERE "jobId" = $1`, [expired])).toEqual([]);
});
