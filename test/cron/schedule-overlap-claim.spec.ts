import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { planOfClaim, withParentNames } from '../support/query-plan.js';
import { executions, recording } from '../support/recorder.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_overlap_claim');

/** A schedule of the recording task whose slots the test writes itself, as the planner would. */
async function overlapSchedule(name: string): Promise<void> {
  await db.query(
    `INSERT INTO jobs."jobSchedule" (name, task, cron, overlap, "plannedUntil")
     VALUES ($1, 'record', '0 0 1 1 *', 'skip', now())`,
    [name],
  );
}

/** Planned jobs of `schedule` at now - `secondsAgo`, each due, within its 60 s grace. */
async function dueSlots(schedule: string, secondsAgo: number[]): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    `WITH slots AS (
       INSERT INTO jobs."jobScheduleSlot" (schedule, slot, "jobId")
       SELECT $1, date_trunc('second', now()) - s * interval '1 second', gen_random_uuid()
       FROM unnest($2::int[]) s
       RETURNING slot, "jobId"
     )
     INSERT INTO jobs.jobs (id, task, "waitUntil", "startBy", "maxRetries", "isScheduled", "overlapSchedule")
     SELECT "jobId", 'record', slot, slot + interval '60 seconds', 0, true, $1 FROM slots
     RETURNING id`,
    [schedule, secondsAgo],
  );
  return rows.map((row) => row.id);
}

beforeAll(async () => {
  // The schema, migrated by an instance that runs nothing.
  await (
    await startJobsApp(db.url, { ...recording('migrator'), options: { runJobs: false } })
  ).close();
});

it("starts only the latest of an overlap: 'skip' schedule's due slots, even when one claim takes them all, and records the others skipped", async () => {
  await overlapSchedule('backlog');
  const ids = await dueSlots('backlog', [3, 2, 1]);
  // One claim takes the three (concurrency 10): the judgement cannot rely on committed runs only.
  const app = await startJobsApp(db.url, { ...recording('b'), options: { concurrency: 10 } });
  const states = () =>
    db.query<{ id: string; state: string }>(
      'SELECT id, state FROM jobs."jobHistory" WHERE id = ANY($1::uuid[])',
      [ids],
    );
  await waitFor('the three slots to be judged and the run to end', async () => {
    const rows = await states();
    return rows.length === 3 && rows.every((row) => row.state !== 'active');
  });
  const byId = new Map((await states()).map((row) => [row.id, row.state]));
  expect(ids.map((id) => byId.get(id))).toEqual(['skipped', 'skipped', 'completed']);
  expect(executions.map((run) => run.id)).toEqual([ids[2]]);
  await app.close();
});

it("judges overlap: 'skip' on the active attempts and the slot indexes, never by a pass over a schedule's slots or over history", async () => {
  await overlapSchedule('planned');
  // An every-second schedule's hour of slot rows, a long history, none of it ever analysed.
  // History is partitioned: its rows of now, and these, are in the default partition.
  await db.query('ALTER TABLE jobs."jobHistory_default" SET (autovacuum_enabled = false)');
  await db.query('ALTER TABLE jobs."jobScheduleSlot" SET (autovacuum_enabled = false)');
  await db.query(
    `INSERT INTO jobs."jobScheduleSlot" (schedule, slot, "jobId")
     SELECT 'planned', now() - g * interval '1 second', gen_random_uuid() FROM generate_series(10, 3600) g`,
  );
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
     SELECT "jobId", 'record', 'completed', 1, 0, slot, slot, slot FROM jobs."jobScheduleSlot" WHERE schedule = 'planned'`,
  );
  await dueSlots('planned', [2, 1]);

  const all = withParentNames(await planOfClaim(db));
  // The active run is looked for among the active attempts only.
  expect(all.some((node) => node['Index Name'] === 'job_history_active')).toBe(true);
  expect(
    all.filter(
      (node) =>
        node['Node Type'] === 'Seq Scan' &&
        ['jobHistory', 'jobScheduleSlot'].includes(node['Relation Name'] ?? ''),
    ),
  ).toEqual([]);
});
