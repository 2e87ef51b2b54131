import { jest } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import pg from 'pg';
import { JobTask, JobsAdminModule } from 'nestjs-pg-jobs';
import type {
  JobTaskHandler,
  QueueDepthReport,
  TaskDurations,
  TaskDurationsReport,
} from 'nestjs-pg-jobs';
import { QueueStateService } from '../../libs/jobs/src/queue-state/queue-state.service.js';
import { MinuteStatsRecorder } from '../../libs/jobs/src/minute-stats/minute-stats-recorder.js';
import { DURATION_PERCENTILE_ERROR } from '../../libs/jobs/src/minute-stats/duration-buckets.js';
import { json, startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

/** The instance serving the API; it runs the imports (its queue starts paused). */
let server: HttpJobsApp | undefined;
// Before the database's own hooks (Jest runs afterAll hooks in declaration order): the instance
// works on its database until it is closed.
afterAll(() => server?.close());
const db = useTestDatabase('jobs_admin_minute_stats');

@JobTask({ name: 'importRows', queue: 'imports' })
@Injectable()
class ImportRows implements JobTaskHandler {
  run(): void {}
}

/** A second instance, that runs no jobs. */
let peer: JobsApp;
const recorderOf = (app: { get: HttpJobsApp['app']['get'] }) => app.get(MinuteStatsRecorder);
const api = <T>(path: string) => json<T>(fetch(`${server!.url}/jobs-admin/api/${path}`));

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ guard: { canActivate: () => true } })],
    tasks: [ImportRows],
    options: { pollingCheck: 0.2, queues: { imports: { paused: true } } },
  });
  peer = await startJobsApp(db.url, { options: { runJobs: false } });
  // The tests write the minutes they need themselves: the instance's own writer stays out of them.
  await recorderOf(server!.app).stop();
}, 30_000);

/**
 * Waits until the database's clock is between 8 and 50 s into its minute, so that every statement
 * of the next few seconds takes the same minute (the minute to write changes 5 s past each minute).
 */
async function awayFromMinuteEdge(): Promise<void> {
  await waitFor(
    'a clock away from the minute edge',
    async () => {
      const [{ second }] = await db.query<{ second: number }>(
        `SELECT extract(second FROM now())::float8 AS second`,
      );
      return second >= 8 && second <= 50;
    },
    30_000,
    250,
  );
}

/** The start of the minute `ago` minutes before the current one, by the database's clock. */
async function minuteAgo(ago: number): Promise<Date> {
  const [{ minute }] = await db.query<{ minute: Date }>(
    `SELECT date_trunc('minute', now()) - make_interval(mins => $1) AS minute`,
    [ago],
  );
  return minute;
}

/** Waits until `count` sessions of the test database wait for a lock. */
const lockWaiters = (count: number) =>
  waitFor(`${count} sessions waiting for a lock`, async () => {
    const [{ waiting }] = await db.query<{ waiting: number }>(
      `SELECT count(*)::int AS waiting FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    return waiting === count;
  });

/** A session of its own, holding a transaction open while the instances run into its locks. */
async function holding(sql: string, values: unknown[]): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  await client.query('BEGIN');
  await client.query(sql, values);
  return client;
}

describe('the per-minute writer', () => {
  it('writes the minute that closed once across two instances: one takes it, the other writes nothing', async () => {
    await awayFromMinuteEdge();
    // Both ask while a transaction holds the lease's row: both wait, then one takes the minute.
    const lease = await holding(
      `SELECT 1 FROM jobs."jobLock" WHERE key = 'minuteStats' FOR UPDATE`,
      [],
    );
    const samples = [server!.app.get(QueueStateService), peer.module.get(QueueStateService)].map(
      (queues) => jest.spyOn(queues, 'list'),
    );
    const asked = Promise.all([
      recorderOf(server!.app).recordClosedMinute(),
      recorderOf(peer.module).recordClosedMinute(),
    ]);
    await lockWaiters(2);
    await lease.query('COMMIT');
    await lease.end();
    const written = (await asked).filter((minute) => minute !== null);
    expect(written).toEqual([await minuteAgo(1)]);
    // Only the instance that took the minute sampled the queues.
    expect(samples.map((sample) => sample.mock.calls.length).sort()).toEqual([0, 1]);
    for (const sample of samples) sample.mockRestore();
    // Asked again in the same minute, neither writes.
    await expect(recorderOf(peer.module).recordClosedMinute()).resolves.toBeNull();
    const minutes = await db.query<{ minute: Date }>(`SELECT minute FROM jobs."jobMinute"`);
    expect(minutes.map((row) => row.minute)).toEqual(written);
  });

  it('never writes a minute twice, even when two instances write it at the same moment without the lease', async () => {
    const minute = await minuteAgo(30);
    await db.query(
      `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
       SELECT gen_random_uuid(), 'twice', 'completed', 1, 0, $1, $1, $1::timestamptz + make_interval(secs => i)
       FROM generate_series(1, 3) AS i`,
      [minute],
    );
    // A transaction inserts the minute first: both writers wait on its key, then it gives way.
    const first = await holding(`INSERT INTO jobs."jobMinute" (minute) VALUES ($1)`, [minute]);
    const writes = Promise.all([
      recorderOf(server!.app).writeMinute(minute),
      recorderOf(peer.module).writeMinute(minute),
    ]);
    await lockWaiters(2);
    await first.query('ROLLBACK');
    await first.end();
    expect((await writes).sort()).toEqual([false, true]);
    await expect(recorderOf(peer.module).writeMinute(minute)).resolves.toBe(false);
    const rows = await db.query(
      `SELECT task, completed, failed FROM jobs."jobTaskMinute" WHERE minute = $1`,
      [minute],
    );
    expect(rows).toEqual([{ task: 'twice', completed: 3, failed: 0 }]);
    // The schema itself refuses a second write of a minute's figures.
    await expect(
      db.query(
        `INSERT INTO jobs."jobTaskMinute" (minute, task, completed, failed, buckets, counts)
         VALUES ($1, 'twice', 1, 0, '{}', '{}')`,
        [minute],
      ),
    ).rejects.toThrow(/duplicate key/);
  });

  it('deletes the minutes and hours older than the kept day when it writes one', async () => {
    const old = await db.query<{ minute: Date }>(
      `INSERT INTO jobs."jobMinute" (minute) VALUES (date_trunc('minute', now()) - interval '2 days')
       RETURNING minute`,
    );
    await db.query(
      `INSERT INTO jobs."jobQueueMinute" (minute, queue, pending, blocked, due, active)
       VALUES ($1, 'imports', 1, 0, 1, 0)`,
      [old[0].minute],
    );
    await db.query(
      `INSERT INTO jobs."jobTaskHour" (hour, task, completed, failed, buckets, counts)
       VALUES (date_trunc('hour', now()) - interval '2 days', 'old', 1, 0, '{3}', '{1}')`,
    );
    await recorderOf(peer.module).writeMinute(await minuteAgo(40), []);
    await expect(
      db.query(`SELECT 1 FROM jobs."jobMinute" WHERE minute = $1`, [old[0].minute]),
    ).resolves.toEqual([]);
    await expect(db.query(`SELECT 1 FROM jobs."jobTaskHour" WHERE task = 'old'`)).resolves.toEqual(
      [],
    );
    await expect(
      db.query(`SELECT 1 FROM jobs."jobQueueMinute" WHERE minute = $1`, [old[0].minute]),
    ).resolves.toEqual([]);
  });
});

describe('GET api/queues/:name/depth', () => {
  it("gives a queue's depth at the end of each minute written: growing, then drained", async () => {
    await awayFromMinuteEdge();
    // Only the minutes this test writes: the minutes other tests wrote go.
    await db.query(`DELETE FROM jobs."jobMinute"`);
    const write = async (ago: number) =>
      expect(await recorderOf(server!.app).writeMinute(await minuteAgo(ago))).toBe(true);
    await server!.queue.addJobs(Array.from({ length: 30 }, () => ({ task: 'importRows' })));
    await write(3);
    await server!.queue.addJobs(Array.from({ length: 30 }, () => ({ task: 'importRows' })));
    await write(2);
    await server!.queue.resumeQueue('imports');
    await waitFor('the imports drained', async () => {
      const imports = (await server!.queue.getQueues()).find((queue) => queue.name === 'imports');
      return imports?.pending === 0 && imports.active === 0;
    });
    await write(1);

    const depth = await api<QueueDepthReport>('queues/imports/depth?minutes=10');
    expect(depth.queue).toBe('imports');
    expect(depth.minutes).toBe(10);
    expect(
      depth.points.map(({ minute, pending, blocked, due, active }) => ({
        minute: new Date(minute),
        pending,
        blocked,
        due,
        active,
      })),
    ).toEqual([
      { minute: await minuteAgo(3), pending: 30, blocked: 0, due: 30, active: 0 },
      { minute: await minuteAgo(2), pending: 60, blocked: 0, due: 60, active: 0 },
      { minute: await minuteAgo(1), pending: 0, blocked: 0, due: 0, active: 0 },
    ]);
    // The window: the minute that began one minute ago, and the one running now.
    const lastMinute = await api<QueueDepthReport>('queues/imports/depth?minutes=1');
    expect(lastMinute.points.map((point) => point.pending)).toEqual([0]);
    // A queue with no minute written has no point.
    await expect(api<QueueDepthReport>('queues/nothing/depth')).resolves.toEqual({
      queue: 'nothing',
      minutes: 60,
      points: [],
    });
    await expect(
      json(fetch(`${server!.url}/jobs-admin/api/queues/imports/depth?minutes=1441`), 400),
    ).resolves.toMatchObject({ message: expect.stringContaining('"minutes"') });
  });
});

describe('GET api/durations over a day', () => {
  /** What history says over the window of `minutes`: per task, the counts and exact percentiles. */
  const fromHistory = (minutes: number) =>
    db.query<{ task: string; completed: number; failed: number; p: number[] | null }>(
      `SELECT task, count(*) FILTER (WHERE state = 'completed')::int AS completed,
              count(*) FILTER (WHERE state = 'failed')::int AS failed,
              percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (
                ORDER BY extract(epoch FROM "completedAt" - "startedAt") * 1000
              ) FILTER (WHERE state = 'completed') AS p
       FROM jobs."jobHistory"
       WHERE state IN ('completed', 'failed')
         AND "completedAt" >= date_trunc('minute', now() - make_interval(mins => $1))
       GROUP BY task ORDER BY task`,
      [minutes],
    );

  it('gives the counts history gives, and percentiles within the bound, reading the minutes written', async () => {
    await awayFromMinuteEdge();
    // 600 jobs of two tasks over the last day, durations from 1 ms to 10 min on a log scale, one in
    // twelve failed; a few end in the minute running now.
    await db.query(
      `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
       SELECT gen_random_uuid(), CASE WHEN i % 3 = 0 THEN 'beta' ELSE 'alpha' END,
              CASE WHEN i % 12 = 0 THEN 'failed' ELSE 'completed' END, 1, 0, t.ended - interval '1 hour',
              t.ended - make_interval(secs => power(10, (i % 57) / 10.0) / 1000), t.ended
       FROM generate_series(1, 600) AS i,
            LATERAL (SELECT CASE WHEN i <= 10 THEN now() - interval '2 seconds'
                                 ELSE date_trunc('minute', now()) - make_interval(mins => 70 + (i * 7) % 1300)
                                      + make_interval(secs => i % 50) END AS ended) AS t`,
    );
    // Every minute with endings is written, but one: its endings are read from history.
    const minutes = await db.query<{ minute: Date }>(
      `SELECT DISTINCT date_trunc('minute', "completedAt") AS minute FROM jobs."jobHistory"
       WHERE task IN ('alpha', 'beta') AND "completedAt" < date_trunc('minute', now())
       ORDER BY 1 OFFSET 1`,
    );
    expect(minutes.length).toBeGreaterThan(100);
    for (const { minute } of minutes) await recorderOf(peer.module).writeMinute(minute, []);

    const day = await api<TaskDurationsReport>('durations?minutes=1440');
    expect(day.minutes).toBe(1440);
    expect(day.percentiles).toBe('buckets');
    const history = await fromHistory(1440);
    const lines = (tasks: TaskDurations[]) =>
      tasks.map(({ task, completed, failed }) => ({ task, completed, failed }));
    expect(lines(day.tasks)).toEqual(
      history.map(({ task, completed, failed }) => ({ task, completed, failed })),
    );
    expect(day.tasks.find((line) => line.task === 'alpha')?.completed).toBeGreaterThan(300);
    for (const line of day.tasks) {
      const exact = history.find((row) => row.task === line.task)!.p!;
      const estimated = [line.durationMs!.p50, line.durationMs!.p95, line.durationMs!.p99];
      estimated.forEach((value, i) =>
        expect(Math.abs(value - exact[i]) / exact[i]).toBeLessThanOrEqual(
          DURATION_PERCENTILE_ERROR,
        ),
      );
      expect(line.failureRate).toBeCloseTo(line.failed / (line.completed + line.failed), 10);
    }

    // The minutes written are read from their rows, not from history: with their history gone,
    // the day's counts stay.
    await db.query(
      `DELETE FROM jobs."jobHistory" h USING jobs."jobMinute" m
       WHERE h."completedAt" >= m.minute AND h."completedAt" < m.minute + interval '1 minute'`,
    );
    expect(lines((await api<TaskDurationsReport>('durations?minutes=1440')).tasks)).toEqual(
      lines(day.tasks),
    );
    // The hours summed once closed are read from their rows: with their minutes' rows gone too,
    // the day's counts stay (and the hours were summed: many of them).
    const [{ hours }] = await db.query<{ hours: number }>(
      `SELECT count(DISTINCT hour)::int AS hours FROM jobs."jobTaskHour"`,
    );
    expect(hours).toBeGreaterThan(15);
    await db.query(
      `DELETE FROM jobs."jobTaskMinute" t USING jobs."jobTaskHour" h
       WHERE t.minute >= h.hour AND t.minute < h.hour + interval '1 hour'`,
    );
    expect(lines((await api<TaskDurationsReport>('durations?minutes=1440')).tasks)).toEqual(
      lines(day.tasks),
    );
    // An hour is still read from history, exact.
    await expect(api<TaskDurationsReport>('durations?minutes=60')).resolves.toMatchObject({
      percentiles: 'exact',
    });
  });
});
