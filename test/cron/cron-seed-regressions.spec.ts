import { CronExpressionParser } from 'cron-parser';
import { CronPlannerService, InvalidJobOptionsError } from 'nestjs-pg-jobs';
import { startJobsApp } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_cron_seed');

/**
 * The seed's `planSlots` loop, kept as it was (cron-parser v5 API misuse included), minus the
 * database: given the schedules and the pending scheduled jobs, it returns what it would `addJob`.
 */
function seedAddScheduled(
  schedules: { task: string; cron: string; payload?: unknown }[],
  existingJobs: { task: string; waitUntil: Date }[],
): Record<string, unknown>[] {
  const added: Record<string, unknown>[] = [];
  for (const job of schedules) {
    const plannedIterations = CronExpressionParser.parse(job.cron, {
      startDate: new Date().toISOString(),
      endDate: new Date(Date.now() + (24 * 60 + 5) * 60_000).toISOString(),
      tz: 'UTC',
    } as never);
    let addedFutureJobs = 0;
    while (true) {
      try {
        const next = plannedIterations.next() as any;
        if (
          !existingJobs.some(
            (j) => j.task === job.task && j.waitUntil.getTime() === next.value.getTime(),
          )
        ) {
          added.push({
            task: job.task,
            useWorker: true,
            payload: job.payload,
            isScheduled: true,
            waitUntil: next.toISOString(),
            notify: false,
          });
          addedFutureJobs++;
        }
        if (next.done || addedFutureJobs >= 10) break;
      } catch {
        break;
      }
    }
  }
  return added;
}

let app: JobsApp;
beforeAll(async () => {
  app = await startJobsApp(db.url, { options: { allowUnknownTasks: true, scheduledCheck: 3600 } });
});
afterAll(() => app.close());

const plannedSlots = () =>
  db.query<{ slot: Date; waitUntil: Date; isScheduled: boolean }>(
    `SELECT p.slot, j."waitUntil", j."isScheduled" FROM jobs.jobs j
     JOIN jobs."jobScheduleSlot" p ON p."jobId" = j.id ORDER BY p.slot`,
  );

it("plans the missing slots of a schedule that already has planned jobs (the seed's next.value threw and planned none)", async () => {
  const cron = app.module.get(CronPlannerService);
  await cron.setSchedule({ task: 'hourly', cron: '0 * * * *' });
  // Nine of its ten planned jobs ran; one is still pending.
  await db.query(
    `DELETE FROM jobs.jobs WHERE id NOT IN (SELECT "jobId" FROM jobs."jobScheduleSlot" ORDER BY slot DESC LIMIT 1)`,
  );
  await db.query(
    `DELETE FROM jobs."jobScheduleSlot" WHERE "jobId" NOT IN (SELECT id FROM jobs.jobs)`,
  );
  const pending = await plannedSlots();
  expect(pending).toHaveLength(1);

  const seed = seedAddScheduled(
    [{ task: 'hourly', cron: '0 * * * *' }],
    [{ task: 'hourly', waitUntil: pending[0].waitUntil }],
  );
  expect(seed).toHaveLength(0);

  expect(await cron.planSlots()).toBe(9);
  expect(await cron.planSlots()).toBe(0);
  const slots = (await plannedSlots()).map((row) => row.slot.getTime());
  expect(slots).toHaveLength(10);
  expect(new Set(slots).size).toBe(10);
  await cron.removeSchedule('hourly');
});

it("enqueues planned jobs with a Date waitUntil at the slot and isScheduled, where the seed's arguments are refused", async () => {
  const [seedJob] = seedAddScheduled([{ task: 'minutely', cron: '* * * * *' }], []);
  // The seed's call: `useWorker` is not an option, and its `waitUntil` is an ISO string.
  await expect(app.queue.addJob(seedJob as never)).rejects.toThrow(InvalidJobOptionsError);
  const withoutUseWorker = { ...seedJob };
  delete withoutUseWorker.useWorker;
  await expect(app.queue.addJob(withoutUseWorker as never)).rejects.toThrow(
    '"waitUntil" must be a valid Date',
  );

  const cron = app.module.get(CronPlannerService);
  await cron.setSchedule({ task: 'minutely', cron: '* * * * *' });
  const rows = await plannedSlots();
  expect(rows).toHaveLength(10);
  for (const row of rows) {
    expect(row.waitUntil).toEqual(row.slot);
    expect(row.slot.getUTCSeconds()).toBe(0);
    expect(row.isScheduled).toBe(true);
  }
  await cron.removeSchedule('minutely');
});
