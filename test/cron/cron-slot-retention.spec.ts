import { randomUUID } from 'node:crypto';
import { CronPlannerService } from 'nestjs-pg-jobs';
import { startJobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_cron_slot_retention');

/**
 * Replaces every slot row with rows of schedule `tick` this many minutes old, whose jobs ended
 * and whose records are gone: only their age decides whether a planning round keeps them. Those
 * of `queued` have their job still queued.
 */
async function slotsMinutesAgo(minutes: number[], queued: number[] = []): Promise<void> {
  await db.query('DELETE FROM jobs."jobScheduleSlot"');
  await db.query('DELETE FROM jobs.jobs');
  for (const ago of minutes) {
    const jobId = randomUUID();
    await db.query(
      `INSERT INTO jobs."jobScheduleSlot" (schedule, slot, "jobId")
       VALUES ('tick', now() - make_interval(mins => $1), $2)`,
      [ago, jobId],
    );
    if (queued.includes(ago)) {
      await db.query(
        `INSERT INTO jobs.jobs (id, task, "maxRetries", "waitUntil", "isScheduled")
         VALUES ($1, 'tick', 0, now() - make_interval(mins => $2), true)`,
        [jobId, ago],
      );
    }
  }
}

/** How many minutes old each slot row left is, oldest first. */
async function slotsLeft(): Promise<number[]> {
  const rows = await db.query<{ ago: number }>(
    `SELECT round(extract(epoch FROM now() - slot) / 60)::int AS ago
     FROM jobs."jobScheduleSlot" ORDER BY slot`,
  );
  return rows.map((row) => row.ago);
}

/**
 * The minutes old of the slot rows left after one planning round (which prunes them) on an
 * instance with this `historyExpiration`, of rows `minutes` old (those of `queued` with their jobs
 * still queued).
 */
async function slotsLeftByRound(
  historyExpiration: number,
  minutes: number[],
  queued: number[] = [],
): Promise<number[]> {
  const app = await startJobsApp(db.url, {
    options: {
      historyExpiration,
      // One history table whatever the expiration: the apps of this file share the database.
      historyPartitionInterval: 0,
      runJobs: false,
      allowUnknownTasks: true,
      scheduledCheck: 3600,
    },
  });
  try {
    await slotsMinutesAgo(minutes, queued);
    await app.module.get(CronPlannerService).planSlots();
  } finally {
    await app.close();
  }
  return slotsLeft();
}

it('keeps a slot row past the hour while history keeps its job (historyExpiration), and prunes it after; one whose job is queued stays whatever its age', async () => {
  expect(await slotsLeftByRound(2 * 3600, [300, 180, 150, 90, 30], [300])).toEqual([300, 90, 30]);
});

it('keeps slot rows an hour at least when history expires sooner', async () => {
  expect(await slotsLeftByRound(600, [90, 61, 30, 5])).toEqual([30, 5]);
});

it('keeps slot rows forever when history is kept forever (historyExpiration: 0)', async () => {
  expect(await slotsLeftByRound(0, [400 * 24 * 60, 90])).toEqual([400 * 24 * 60, 90]);
});
