import { Injectable } from '@nestjs/common';
import { JobTask, JobsMetricsService, JobsMetricsModule } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { FlakyTask } from '../support/flaky-task.js';
import { startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import { parsePrometheusText } from '../support/prometheus-text.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

/** Runs until the test opens the gate: a job that is reliably active while the test looks. */
let openGate: () => void = () => undefined;
@JobTask('gated')
@Injectable()
class GatedTask implements JobTaskHandler {
  run(): Promise<void> {
    return new Promise((resolve) => (openGate = resolve));
  }
}

let server: HttpJobsApp;
beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsMetricsModule.forRoot({ path: 'metrics' })],
    tasks: [FlakyTask, GatedTask],
    options: { pollingCheck: 0.1, retryBackoff: 0, maxRetries: 0, allowUnknownTasks: true },
  });
});
afterAll(async () => {
  openGate();
  await server?.close();
});

async function scrape(): Promise<Map<string, number>> {
  const res = await fetch(`${server.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}
const history = (id: string) =>
  db.query<{ state: string }>(`SELECT state FROM jobs."jobHistory" WHERE id = $1`, [id]);
const endedFor = (id: string, state: string) =>
  waitFor(`job ${id} to end ${state}`, async () => {
    const queued = await db.query(`SELECT 1 FROM jobs.jobs WHERE id = $1`, [id]);
    const [row] = await history(id);
    return queued.length === 0 && row?.state === state;
  });

it('reports added, completed and failed counts, durations, queue depth and active jobs after a known sequence', async () => {
  const add = async (task: string, payload: object = {}, extra: object = {}) =>
    (await server.queue.addJob({ task, payload, ...extra })).id;
  const ok = [await add('flaky'), await add('flaky'), await add('flaky')];
  const retried = await add('flaky', { failUntilAttempt: 1 }, { maxRetries: 1 });
  const doomed = await add('flaky', { failUntilAttempt: 9 });
  await add('flaky', {}, { waitUntil: new Date(Date.now() + 3600_000) });
  await add('nobodyRunsThis');
  for (const id of [...ok, retried]) await endedFor(id, 'completed');
  await endedFor(doomed, 'failed');
  const gated = await add('gated');
  await waitFor(
    'the gated job to start',
    async () => (await history(gated))[0]?.state === 'active',
  );
  const seenRunning = Date.now();

  const during = await scrape();
  expect(during.get('nestjs_pg_jobs_added_total{queue="default",task="flaky"}')).toBe(6);
  expect(during.get('nestjs_pg_jobs_added_total{queue="default",task="nobodyRunsThis"}')).toBe(1);
  expect(during.get('nestjs_pg_jobs_added_total{queue="default",task="gated"}')).toBe(1);
  expect(during.get('nestjs_pg_jobs_completed_total{queue="default",task="flaky"}')).toBe(4);
  expect(
    during.get('nestjs_pg_jobs_failed_total{final="false",queue="default",task="flaky"}'),
  ).toBe(1);
  expect(during.get('nestjs_pg_jobs_failed_total{final="true",queue="default",task="flaky"}')).toBe(
    1,
  );
  expect(
    during.get(
      'nestjs_pg_jobs_duration_seconds_count{outcome="completed",queue="default",task="flaky"}',
    ),
  ).toBe(4);
  expect(
    during.get(
      'nestjs_pg_jobs_duration_seconds_count{outcome="failed",queue="default",task="flaky"}',
    ),
  ).toBe(2);
  expect(during.get('nestjs_pg_jobs_queue_depth{queue="default",task="flaky"}')).toBe(1);
  expect(during.get('nestjs_pg_jobs_queue_depth{queue="default",task="nobodyRunsThis"}')).toBe(1);
  expect(during.get('nestjs_pg_jobs_queue_depth{queue="default",task="gated"}')).toBe(0);
  expect(during.get('nestjs_pg_jobs_active{queue="default",task="gated"}')).toBe(1);
  expect(during.get('nestjs_pg_jobs_active{queue="default",task="flaky"}')).toBe(0);

  const released = Date.now();
  openGate();
  await endedFor(gated, 'completed');
  const after = await scrape();
  expect(after.get('nestjs_pg_jobs_active{queue="default",task="gated"}')).toBe(0);
  expect(after.get('nestjs_pg_jobs_completed_total{queue="default",task="gated"}')).toBe(1);
  expect(
    after.get(
      'nestjs_pg_jobs_duration_seconds_count{outcome="completed",queue="default",task="gated"}',
    ),
  ).toBe(1);
  // It ran at least from when the test saw it running until the test let it finish.
  const seconds = after.get(
    'nestjs_pg_jobs_duration_seconds_sum{outcome="completed",queue="default",task="gated"}',
  )!;
  expect(seconds * 1000).toBeGreaterThanOrEqual(released - seenRunning - 5);
});

it('exports JobsMetricsService for an endpoint of your own, with the same registry', async () => {
  const metrics = server.app.get(JobsMetricsService);
  expect(metrics.contentType).toMatch(/^text\/plain/);
  expect(await metrics.metrics()).toContain('nestjs_pg_jobs_added_total');
});
