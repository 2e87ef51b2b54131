import { Injectable } from '@nestjs/common';
import { CronPlannerService, defineTask, InvalidPayloadError, JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler, StandardSchemaV1 } from 'nestjs-pg-jobs';
import { z } from 'zod';
import { startJobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

const Report = defineTask({
  name: 'typedCron.report',
  payloadSchema: z.object({ to: z.email(), days: z.number().int().default(7) }),
});

/** Asynchronous, as a schema that looks something up would be. */
const regionSchema: StandardSchemaV1<{ region: string }> = {
  '~standard': {
    version: 1,
    vendor: 'hand-written',
    validate: async (value) => {
      await new Promise((resolve) => setImmediate(resolve));
      const region = (value as { region?: unknown } | null)?.region;
      return region === 'eu' || region === 'us'
        ? { value: { region } }
        : { issues: [{ message: 'unknown region', path: ['region'] }] };
    },
  },
};
const Sync = defineTask({ name: 'typedCron.sync', payloadSchema: regionSchema });

@JobTask(Report)
@Injectable()
class ReportHandler implements JobTaskHandler<typeof Report> {
  run(): void {}
}

@JobTask(Sync)
@Injectable()
class SyncHandler implements JobTaskHandler<typeof Sync> {
  run(): void {}
}

async function storedSchedules(): Promise<string[]> {
  const rows = await db.query<{ name: string }>(
    'SELECT name FROM jobs."jobSchedule" ORDER BY name',
  );
  return rows.map((row) => row.name);
}

describe('setSchedule', () => {
  it("refuses a payload the task's payloadSchema refuses, with its issues, and writes nothing", async () => {
    const app = await startJobsApp(db.url, {
      tasks: [ReportHandler, SyncHandler],
      options: { runJobs: false },
    });
    const planner = app.module.get(CronPlannerService);
    const refused = planner.setSchedule({
      name: 'weekly-report',
      task: 'typedCron.report',
      cron: '0 8 * * 1',
      payload: { to: 'not-an-email' },
    });
    await expect(refused).rejects.toBeInstanceOf(InvalidPayloadError);
    await expect(refused).rejects.toMatchObject({
      schedule: 'weekly-report',
      path: '$.to',
      issues: [expect.objectContaining({ path: ['to'] })],
      message: expect.stringMatching(
        /^The payload of schedule "weekly-report" does not match the payloadSchema of task "typedCron\.report": \$\.to: .*Nothing was written\.$/,
      ),
    });
    // An asynchronous schema is awaited.
    await expect(
      planner.setSchedule({
        task: 'typedCron.sync',
        cron: '0 * * * *',
        payload: { region: 'mars' },
      }),
    ).rejects.toMatchObject({ schedule: 'typedCron.sync', path: '$.region' });
    expect(await storedSchedules()).toEqual([]);

    // What the schemas accept is stored as given (the handler's instance parses it at run).
    await planner.setSchedule({
      name: 'weekly-report',
      task: 'typedCron.report',
      cron: '0 8 * * 1',
      payload: { to: 'ada@example.com' },
    });
    await planner.setSchedule({
      task: 'typedCron.sync',
      cron: '0 * * * *',
      payload: { region: 'eu' },
    });
    expect(await storedSchedules()).toEqual(['typedCron.sync', 'weekly-report']);
    const [{ payload }] = await db.query<{ payload: unknown }>(
      `SELECT payload FROM jobs."jobSchedule" WHERE name = 'weekly-report'`,
    );
    expect(payload).toEqual({ to: 'ada@example.com' });
    await planner.removeSchedule('weekly-report');
    await planner.removeSchedule('typedCron.sync');
    await app.close();
  });
});

describe('a static schedule', () => {
  it("whose payload the task's payloadSchema refuses fails the boot (@JobTask({ cron, payload })), naming it", async () => {
    const Nightly = defineTask({
      ...Report,
      name: 'typedCron.nightly',
      cron: '0 3 * * *',
      payload: { to: 'nobody' },
    });
    @JobTask(Nightly)
    @Injectable()
    class NightlyHandler implements JobTaskHandler<typeof Nightly> {
      run(): void {}
    }
    const boot = startJobsApp(db.url, { tasks: [NightlyHandler], options: { runJobs: false } });
    await expect(boot).rejects.toBeInstanceOf(InvalidPayloadError);
    await expect(boot).rejects.toMatchObject({
      schedule: 'typedCron.nightly',
      message: expect.stringContaining(
        'The payload of schedule "typedCron.nightly" does not match the payloadSchema of task "typedCron.nightly"',
      ),
    });
    expect(await storedSchedules()).toEqual([]);
  });

  it("whose payload the task's payloadSchema refuses fails the boot (the schedules option), naming it", async () => {
    const boot = startJobsApp(db.url, {
      tasks: [ReportHandler, SyncHandler],
      options: {
        runJobs: false,
        schedules: [
          { name: 'ok-sync', task: 'typedCron.sync', cron: '0 * * * *', payload: { region: 'us' } },
          { name: 'bad-sync', task: 'typedCron.sync', cron: '0 * * * *', payload: {} },
        ],
      },
    });
    await expect(boot).rejects.toMatchObject({
      constructor: InvalidPayloadError,
      schedule: 'bad-sync',
      issues: [{ message: 'unknown region', path: ['region'] }],
    });
    // Checked before any static schedule is written.
    expect(await storedSchedules()).toEqual([]);
  });
});
