import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_cron_run');

@JobTask({ name: 'everySecond', cron: '* * * * * *' })
@Injectable()
class EverySecond implements JobTaskHandler {
  async run(_payload: unknown, ctx: JobContext) {
    await db.query('INSERT INTO ran ("jobId") VALUES ($1)', [ctx.id]);
  }
}

let apps: JobsApp[] = [];
afterAll(() => Promise.all(apps.map((app) => app.close())));

it('runs each slot of an every-second schedule exactly once across three instances, none missing after the first', async () => {
  await db.query(
    'CREATE TABLE ran ("jobId" uuid NOT NULL, "ranAt" timestamptz NOT NULL DEFAULT now())',
  );
  const options = { pollingCheck: 0.2, scheduledCheck: 1, concurrency: 4 };
  apps = await Promise.all(
    Array.from({ length: 3 }, () => startJobsApp(db.url, { tasks: [EverySecond], options })),
  );

  await waitFor(
    'ten seconds of slots to run',
    async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ran'))[0].n >= 10,
    40_000,
    200,
  );
  await Promise.all(apps.map((app) => app.close()));

  const runs = await db.query<{ jobId: string; slot: Date; ranAt: Date; runs: number }>(
    `SELECT r."jobId", p.slot, min(r."ranAt") AS "ranAt", count(*)::int AS runs
     FROM ran r LEFT JOIN jobs."jobScheduleSlot" p ON p."jobId" = r."jobId"
     GROUP BY r."jobId", p.slot ORDER BY p.slot`,
  );
  expect(runs.length).toBeGreaterThanOrEqual(10);
  // Every run was a planned slot, run once, not before its time.
  expect(runs.filter((run) => run.slot === null)).toEqual([]);
  expect(runs.filter((run) => run.runs !== 1)).toEqual([]);
  expect(runs.filter((run) => run.ranAt.getTime() < run.slot.getTime())).toEqual([]);
  // Consecutive seconds from the first run to the last: none missing in between.
  const slots = runs.map((run) => run.slot.getTime());
  expect(slots).toEqual(slots.map((_, i) => slots[0] + i * 1000));
  // And nothing planned in that span is left unrun.
  const skipped = await db.query(
    `SELECT p.slot FROM jobs."jobScheduleSlot" p
     WHERE p.slot BETWEEN $1 AND $2 AND NOT EXISTS (SELECT 1 FROM ran r WHERE r."jobId" = p."jobId")`,
    [runs[0].slot, runs[runs.length - 1].slot],
  );
  expect(skipped).toEqual([]);
});
