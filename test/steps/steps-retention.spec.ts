import { RetentionService } from 'nestjs-pg-jobs';
import { startJobsApp } from '../support/jobs-app.js';
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

/** A job's history row that ended `endedAgo` seconds ago, with one step checkpoint; its id. */
async function endedJobWithStep(endedAgo: number): Promise<string> {
  const [{ id }] = await db.query<{ id: string }>(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
     VALUES (gen_random_uuid(), 'stepped', 'completed', 1, 0, now() - make_interval(secs => $1 + 60),
             now() - make_interval(secs => $1 + 60), now() - make_interval(secs => $1))
     RETURNING id`,
    [endedAgo],
  );
  await db.query(
    `INSERT INTO jobs."jobStep" ("jobId", name, position, state, "startedAt", "endedAt", attempt)
     VALUES ($1, 'load', 0, 'completed', now(), now(), 1)`,
    [id],
  );
  return id;
}

it("deletes a job's steps with its history, old events, and the waits of jobs no longer suspended", async () => {
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
  expect(await db.query(`SELECT event FROM jobs."jobEventWait"`)).toEqual([{ event: 'go' }]);
  expect(await db.query(`SELECT name FROM jobs."jobEvent"`)).toEqual([{ name: 'new' }]);
});
