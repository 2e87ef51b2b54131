import { JobsAdminModule } from 'nestjs-pg-jobs';
import type { TaskDurations } from 'nestjs-pg-jobs';
import { DURATION_PERCENTILE_ERROR } from '../../libs/jobs/src/minute-stats/duration-buckets.js';
import { json, startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let server: HttpJobsApp;

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ guard: { canActivate: () => true } })],
    options: { runJobs: false },
  });
});
afterAll(() => server?.close());

const durations = async (minutes: number): Promise<TaskDurations[]> =>
  (await json(fetch(`${server.url}/jobs-admin/api/durations?minutes=${minutes}`))).tasks;

it("gives each task's failure rate and its completed jobs' duration percentiles over the window", async () => {
  // 100 completed jobs that took 10, 20, ..., 1000 ms, 25 failed ones, in the last minutes; and
  // one that took a minute, which ended two hours ago.
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
     SELECT gen_random_uuid(), 'timed', 'completed', 1, 0, now(), now() - make_interval(secs => 60 + i * 0.01),
            now() - interval '60 seconds'
     FROM generate_series(1, 100) AS i
     UNION ALL
     SELECT gen_random_uuid(), 'timed', 'failed', 1, 0, now(), now() - interval '2 minutes', now() - interval '1 minute'
     FROM generate_series(1, 25)
     UNION ALL
     SELECT gen_random_uuid(), 'timed', 'completed', 1, 0, now(), now() - interval '121 minutes',
            now() - interval '120 minutes'`,
  );
  const [timed] = await durations(60);
  expect(timed).toMatchObject({ task: 'timed', completed: 100, failed: 25, failureRate: 0.2 });
  expect(timed.durationMs!.p50).toBeCloseTo(505, 3);
  expect(timed.durationMs!.p95).toBeCloseTo(950.5, 3);
  expect(timed.durationMs!.p99).toBeCloseTo(990.1, 3);
  // Over three hours, the slow one counts too. Past an hour the figures are read from the
  // per-minute rows (none is written here: every minute is read from history), the percentiles
  // from their buckets.
  const [wider] = await durations(180);
  expect(wider.completed).toBe(101);
  // The median moves up one place among 101 (10, ..., 1000 ms and 60 s): 510 ms, within the
  // buckets' bound.
  expect(Math.abs(wider.durationMs!.p50 - 510) / 510).toBeLessThanOrEqual(
    DURATION_PERCENTILE_ERROR,
  );
  expect(Math.abs(wider.durationMs!.p99 - 1000) / 1000).toBeLessThanOrEqual(
    DURATION_PERCENTILE_ERROR,
  );
});

it('gives no durations for a task none of whose jobs completed in the window', async () => {
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "completedAt")
     VALUES (gen_random_uuid(), 'broken', 'failed', 1, 0, now(), now(), now())`,
  );
  const broken = (await durations(60)).find((line) => line.task === 'broken');
  expect(broken).toEqual({
    task: 'broken',
    completed: 0,
    failed: 1,
    failureRate: 1,
    durationMs: null,
  });
});
