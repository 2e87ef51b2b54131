import { Injectable } from '@nestjs/common';
import {
  CronPlannerService,
  InvalidCronExpressionError,
  InvalidScheduleError,
  InvalidTimeZoneError,
  JobTask,
} from 'nestjs-pg-jobs';
import type { CronScheduleOptions, JobTaskHandler, JobsModuleOptions } from 'nestjs-pg-jobs';
import { expandSlots } from '../../libs/jobs/src/cron-schedule/slot-expansion.js';
import pg from 'pg';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useCluster } from '../support/cluster.js';

const cluster = useCluster({ databasePrefix: 'jobs_cron_plan' });
const { db } = cluster;

/** Instances that plan but never run anything: planned jobs stay in `jobs` for the assertions. */
const planningOnly: Partial<JobsModuleOptions> = {
  allowUnknownTasks: true,
  scheduledCheck: 3600,
  pollingCheck: 3600,
};

const planner = (app: JobsApp) => app.module.get(CronPlannerService);
const dbNow = async () => (await db.query<{ now: Date }>('SELECT now()'))[0].now;

interface PlannedRow {
  schedule: string;
  slot: Date;
  waitUntil: Date;
  isScheduled: boolean;
  task: string;
  payload: unknown;
}

async function plannedJobs(schedule?: string): Promise<PlannedRow[]> {
  return db.query<PlannedRow>(
    `SELECT p.schedule, p.slot, j."waitUntil", j."isScheduled", j.task, j.payload
     FROM jobs.jobs j JOIN jobs."jobScheduleSlot" p ON p."jobId" = j.id
     WHERE $1::text IS NULL OR p.schedule = $1
     ORDER BY p.schedule, p.slot`,
    [schedule ?? null],
  );
}

async function clearSchedules(): Promise<void> {
  await db.query('DELETE FROM jobs.jobs');
  await db.query('DELETE FROM jobs."jobHistory"');
  await db.query('DELETE FROM jobs."jobScheduleSlot"');
  await db.query('DELETE FROM jobs."jobSchedule"');
}

describe('five instances planning at once', () => {
  const schedules: CronScheduleOptions[] = [
    { name: 'everySecond', task: 'tick', cron: '* * * * * *' },
    { name: 'everyQuarterHour', task: 'tick', cron: '*/15 * * * *', payload: { kind: 'quarter' } },
    { name: 'berlinNight', task: 'tick', cron: '30 2 * * *', timezone: 'Europe/Berlin' },
  ];
  let apps: JobsApp[] = [];

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await clearSchedules();
  });

  it('plan every slot in the horizon exactly once', async () => {
    const options = { ...planningOnly, schedules, maxPlannedSlots: 30 };
    // Booting together: migrations, the static schedules and the boot rounds race as well.
    apps = await cluster.startApps(['plan-1', 'plan-2', 'plan-3', 'plan-4', 'plan-5'], { options });
    const before = (
      await db.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs."jobScheduleSlot"')
    )[0].n;
    const start = await dbNow();

    const counts = await Promise.all(
      apps.flatMap((app) => Array.from({ length: 8 }, () => planner(app).planSlots())),
    );

    const rows = await plannedJobs();
    const slotRows = (
      await db.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs."jobScheduleSlot"')
    )[0].n;
    const jobRows = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs.jobs'))[0]
      .n;
    // Every job is a planned slot and every slot has one job; the calls' counts add up to what was written.
    expect(jobRows).toBe(slotRows);
    expect(rows).toHaveLength(jobRows);
    expect(counts.reduce((sum, n) => sum + n, 0)).toBe(slotRows - before);

    for (const schedule of schedules) {
      const mine = rows.filter((row) => row.schedule === schedule.name);
      const slots = mine.map((row) => row.slot.getTime());
      expect(new Set(slots).size).toBe(slots.length);
      expect(
        mine.every((row) => row.waitUntil.getTime() === row.slot.getTime() && row.isScheduled),
      ).toBe(true);
      const source = { cron: schedule.cron as string, timezone: schedule.timezone ?? 'UTC' };
      // No gaps between the first and the last planned slot...
      const between = expandSlots(
        source,
        new Date(slots[0] - 1),
        new Date(slots[slots.length - 1]),
        10_000,
      );
      expect(slots).toEqual(between.map((slot) => slot.getTime()));
      // ...and everything a round started after `start` had to plan is there.
      const due = expandSlots(source, start, new Date(start.getTime() + 86_400_000), 30).map((s) =>
        s.getTime(),
      );
      expect(slots).toEqual(expect.arrayContaining(due));
    }
    expect(rows.find((row) => row.schedule === 'everyQuarterHour')?.payload).toEqual({
      kind: 'quarter',
    });
  });
});

describe('a schedule changed while other instances plan it', () => {
  let apps: JobsApp[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await clearSchedules();
  });

  it('ends with only the final definition planned, whatever the interleaving', async () => {
    apps = await cluster.startApps(['move-1', 'move-2', 'move-3'], { options: planningOnly });
    const minutes = [0, 15, 30, 45];
    await Promise.all(
      apps.flatMap((app, i) =>
        Array.from({ length: 6 }, (_, round) =>
          i === 0
            ? planner(app).planSlots()
            : planner(app).setSchedule({
                name: 'moving',
                task: 'tick',
                cron: `${minutes[(round + i) % minutes.length]} * * * *`,
              }),
        ),
      ),
    );
    const [{ cron }] = await planner(apps[0]).listSchedules();
    const minute = Number(cron.split(' ')[0]);
    const rows = await plannedJobs('moving');
    expect(rows).toHaveLength(10);
    expect(rows.filter((row) => row.slot.getUTCMinutes() !== minute)).toEqual([]);
    expect((await db.query('SELECT id FROM jobs.jobs')).length).toBe(10);
  });
});

describe('a schedule created by one instance while another changes it', () => {
  let app: JobsApp;
  afterAll(async () => {
    await app?.close();
    await clearSchedules();
  });

  it("removes the first definition's planned jobs when the change waited for the creation", async () => {
    app = await startJobsApp(db.url, { options: planningOnly });
    // Another instance creates the schedule, and its planned job is in by the time it commits.
    const creator = new pg.Client({ connectionString: db.url });
    await creator.connect();
    try {
      await creator.query('BEGIN');
      await creator.query(
        `WITH s AS (
           INSERT INTO jobs."jobSchedule" (id, name, task, cron, "plannedUntil")
           VALUES (gen_random_uuid(), 'raced', 'tick', '0 * * * *', now()) RETURNING name
         ), slot AS (
           INSERT INTO jobs."jobScheduleSlot" (schedule, slot, "jobId")
           SELECT name, date_trunc('hour', now()) + interval '1 hour', gen_random_uuid() FROM s
           RETURNING "jobId", slot
         )
         INSERT INTO jobs.jobs (id, task, "waitUntil", "maxRetries", "isScheduled")
         SELECT "jobId", 'tick', slot, 0, true FROM slot`,
      );
      // The change starts before the creation commits: it finds no schedule, then waits on the
      // creator's row.
      const changing = planner(app).setSchedule({
        name: 'raced',
        task: 'tick',
        cron: '30 * * * *',
      });
      await waitFor('the change to wait for the creation', async () => {
        const [{ n }] = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE wait_event_type = 'Lock' AND query LIKE '%jobSchedule%'`,
        );
        return n > 0;
      });
      await creator.query('COMMIT');
      await changing;
    } finally {
      await creator.end();
    }
    const rows = await plannedJobs('raced');
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.filter((row) => row.slot.getUTCMinutes() !== 30)).toEqual([]);
  });
});

describe('schedules changed at run time', () => {
  let app: JobsApp;
  beforeAll(async () => {
    app = await startJobsApp(db.url, { options: planningOnly });
  });
  afterAll(() => app.close());
  afterEach(clearSchedules);

  it('replace the not-yet-started planned jobs of a changed schedule, keeping the started ones', async () => {
    const hourly = { name: 'hourly', task: 'tick' };
    await planner(app).setSchedule({ ...hourly, cron: '0 * * * *', payload: { v: 1 } });
    const first = await plannedJobs('hourly');
    expect(first).toHaveLength(10);
    // One of them has been claimed (as the runner does: out of jobs, into history).
    const [claimed] = await db.query<{ id: string }>(
      `DELETE FROM jobs.jobs WHERE id = (SELECT "jobId" FROM jobs."jobScheduleSlot" WHERE schedule = 'hourly'
                                         ORDER BY slot LIMIT 1) RETURNING id`,
    );
    await db.query(
      `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt")
       VALUES ($1, 'tick', 'active', 1, 0, now(), now())`,
      [claimed.id],
    );

    await planner(app).setSchedule({ ...hourly, cron: '30 * * * *', payload: { v: 2 } });

    const second = await plannedJobs('hourly');
    expect(second).toHaveLength(10);
    expect(second.every((row) => row.slot.getUTCMinutes() === 30)).toBe(true);
    expect(second.every((row) => (row.payload as { v: number }).v === 2)).toBe(true);
    const kept = await db.query(`SELECT 1 FROM jobs."jobScheduleSlot" WHERE "jobId" = $1`, [
      claimed.id,
    ]);
    expect(kept).toHaveLength(1);
    expect(
      await db.query(`SELECT state FROM jobs."jobHistory" WHERE id = $1`, [claimed.id]),
    ).toEqual([{ state: 'active' }]);
  });

  it('leave the planned jobs alone when the definition is set again unchanged', async () => {
    const schedule = { name: 'daily', task: 'tick', cron: '0 6 * * *', timezone: 'Europe/Berlin' };
    await planner(app).setSchedule(schedule);
    const ids = await db.query('SELECT id FROM jobs.jobs ORDER BY id');
    await planner(app).setSchedule(schedule);
    expect(await db.query('SELECT id FROM jobs.jobs ORDER BY id')).toEqual(ids);
    expect(ids.length).toBeGreaterThan(0);
  });

  it('remove a removed schedule and its planned jobs', async () => {
    await planner(app).setSchedule({ name: 'gone', task: 'tick', cron: '*/5 * * * *' });
    await planner(app).setSchedule({ name: 'stays', task: 'tick', cron: '*/5 * * * *' });
    expect(await planner(app).removeSchedule('gone')).toBe(true);
    expect(await planner(app).removeSchedule('gone')).toBe(false);
    expect(await plannedJobs('gone')).toHaveLength(0);
    expect(await plannedJobs('stays')).toHaveLength(10);
    expect((await planner(app).listSchedules()).map((s) => s.name)).toEqual(['stays']);
  });

  it('list what is stored, with the defaults applied', async () => {
    await planner(app).setSchedule({ task: 'tick', cron: '0 0 * * 1', payload: { a: 1 } });
    const [info] = await planner(app).listSchedules();
    expect(info).toMatchObject({
      name: 'tick',
      task: 'tick',
      cron: '0 0 * * 1',
      timezone: 'UTC',
      payload: { a: 1 },
      missedSlots: 'skip',
      // The module's default: twice planningOnly's pollingCheck, being longer than 60 s.
      missedSlotGrace: 7200,
      source: 'dynamic',
    });
    expect(info.plannedUntil).toBeInstanceOf(Date);
  });

  it('give every planned job its slot plus the grace as deadline, and replan when only the grace changes', async () => {
    const schedule = { name: 'graced', task: 'tick', cron: '0 * * * *', missedSlotGrace: 90 };
    const deadlines = () =>
      db.query<{ id: string; slot: Date; startBy: Date }>(
        `SELECT j.id, p.slot, j."startBy" FROM jobs.jobs j
         JOIN jobs."jobScheduleSlot" p ON p."jobId" = j.id ORDER BY p.slot`,
      );
    await planner(app).setSchedule(schedule);
    const first = await deadlines();
    expect(first).toHaveLength(10);
    expect(first.filter((row) => row.startBy.getTime() !== row.slot.getTime() + 90_000)).toEqual(
      [],
    );

    await planner(app).setSchedule({ ...schedule, missedSlotGrace: 5 });
    const second = await deadlines();
    expect(second).toHaveLength(10);
    expect(second.filter((row) => row.startBy.getTime() !== row.slot.getTime() + 5_000)).toEqual(
      [],
    );
    expect(second.filter((row) => first.some((old) => old.id === row.id))).toEqual([]);
  });

  it('refuse bad expressions and time zones with their typed error, writing nothing', async () => {
    const cron = planner(app);
    await expect(cron.setSchedule({ task: 'tick', cron: '* * * *' })).rejects.toThrow(
      InvalidCronExpressionError,
    );
    await expect(cron.setSchedule({ task: 'tick', cron: '' })).rejects.toThrow(
      InvalidCronExpressionError,
    );
    await expect(cron.setSchedule({ task: 'tick', cron: '0 25 * * *' })).rejects.toThrow(
      '"0 25 * * *"',
    );
    await expect(
      cron.setSchedule({ task: 'tick', cron: '* * * * *', timezone: 'Mars/Olympus' }),
    ).rejects.toThrow(InvalidTimeZoneError);
    await expect(
      cron.setSchedule({ task: 'tick', cron: '* * * * *', timezone: 'Mars/Olympus' }),
    ).rejects.toThrow('"Mars/Olympus"');
    await expect(cron.removeSchedule('' as string)).rejects.toThrow(InvalidScheduleError);
    expect(await db.query('SELECT * FROM jobs."jobSchedule"')).toEqual([]);
    expect(await db.query('SELECT * FROM jobs.jobs')).toEqual([]);
  });
});

describe('a bad static schedule', () => {
  it('fails the boot with its typed error before anything is written', async () => {
    await expect(
      startJobsApp(db.url, {
        options: {
          ...planningOnly,
          schema: 'bad_boot',
          schedules: [{ task: 'tick', cron: '99 * * * *' }],
        },
      }),
    ).rejects.toThrow(InvalidCronExpressionError);
    await expect(
      startJobsApp(db.url, {
        options: {
          ...planningOnly,
          schema: 'bad_boot',
          schedules: [{ task: 'tick', cron: '* * * * *', timezone: 'Europe/Nowhere' }],
        },
      }),
    ).rejects.toThrow(InvalidTimeZoneError);
    expect(await db.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'bad_boot'`)).toEqual([]);
  });
});

@JobTask({
  name: 'nightly',
  cron: '0 3 * * *',
  timezone: 'Europe/Berlin',
  payload: { full: true },
  missedSlotGrace: 600,
})
@Injectable()
class NightlyWithCron implements JobTaskHandler {
  run() {}
}

@JobTask({ name: 'nightly' })
@Injectable()
class NightlyWithoutCron implements JobTaskHandler {
  run() {}
}

@JobTask({ name: 'broken', cron: '0 0 * *' })
@Injectable()
class BrokenCron implements JobTaskHandler {
  run() {}
}

describe('@JobTask({ cron })', () => {
  afterEach(clearSchedules);

  it('is written as a static schedule at boot, and removed once the task no longer declares it', async () => {
    const first = await startJobsApp(db.url, {
      tasks: [NightlyWithCron],
      options: { ...planningOnly, runJobs: false },
    });
    const [info] = await planner(first).listSchedules();
    await first.close();
    expect(info).toMatchObject({
      name: 'nightly',
      cron: '0 3 * * *',
      timezone: 'Europe/Berlin',
      payload: { full: true },
      missedSlotGrace: 600,
      source: 'static',
    });
    expect(await plannedJobs('nightly')).toHaveLength(1);

    const second = await startJobsApp(db.url, {
      tasks: [NightlyWithoutCron],
      options: { ...planningOnly, runJobs: false },
    });
    try {
      expect(await planner(second).listSchedules()).toEqual([]);
      expect(await plannedJobs('nightly')).toHaveLength(0);
    } finally {
      await second.close();
    }
  });

  it('with a bad expression fails the boot, naming the task and quoting the expression', async () => {
    const boot = startJobsApp(db.url, { tasks: [BrokenCron], options: planningOnly });
    await expect(boot).rejects.toThrow(InvalidCronExpressionError);
    await expect(boot).rejects.toThrow('Schedule "broken": "cron"');
    expect(await db.query('SELECT * FROM jobs."jobSchedule"')).toEqual([]);
  });
});

describe('slots missed while every instance was down', () => {
  afterEach(clearSchedules);

  it("are skipped by default, and run once on the next boot with missedSlots: 'runOnce'", async () => {
    const schedules: CronScheduleOptions[] = [
      { name: 'skipper', task: 'tick', cron: '* * * * *' },
      { name: 'catcher', task: 'tick', cron: '* * * * *', missedSlots: 'runOnce' },
    ];
    const options = { ...planningOnly, schedules };
    await (await startJobsApp(db.url, { options })).close();
    // Everything planned ran, then every instance stayed down for an hour.
    await db.query('DELETE FROM jobs.jobs');
    await db.query(`UPDATE jobs."jobScheduleSlot" SET slot = slot - interval '2 hours'`);
    await db.query(`UPDATE jobs."jobSchedule" SET "plannedUntil" = now() - interval '1 hour'`);

    const app = await startJobsApp(db.url, { options });
    try {
      const now = await dbNow();
      const due = (schedule: string) =>
        plannedJobs(schedule).then((rows) =>
          rows.filter((row) => row.waitUntil.getTime() <= now.getTime()),
        );
      expect(await due('skipper')).toHaveLength(0);
      const [catchUp, ...more] = await due('catcher');
      expect(more).toHaveLength(0);
      // The most recent missed slot, due at once.
      expect(now.getTime() - catchUp.slot.getTime()).toBeLessThan(60_000);
      expect(await plannedJobs('skipper')).toHaveLength(10);
      expect(await plannedJobs('catcher')).toHaveLength(11);
      // The catch-up is not repeated by the next round.
      expect(await planner(app).planSlots()).toBeLessThanOrEqual(2);
      expect((await due('catcher')).length).toBeLessThanOrEqual(2);
    } finally {
      await app.close();
    }
  });
});
