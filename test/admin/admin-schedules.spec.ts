import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { JobsAdminModule } from 'nestjs-pg-jobs';
import type { JobInfo, ScheduleInfo } from 'nestjs-pg-jobs';
import { startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import { executions, recording } from '../support/recorder.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_admin_schedules');
const TOKEN = 'Bearer let-me-in';

class TokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest().headers.authorization === TOKEN;
  }
}

let server: HttpJobsApp;
const post = (path: string, headers: Record<string, string> = { 'x-jobs-admin': '1' }) =>
  fetch(`${server.url}/ops/api/schedules/${path}`, {
    method: 'POST',
    headers: { authorization: TOKEN, ...headers },
  });
async function json<T>(response: Promise<Response>, status = 200): Promise<T> {
  const res = await response;
  const body = await res.json();
  if (res.status !== status)
    throw new Error(`Expected ${status}, got ${res.status}: ${JSON.stringify(body)}`);
  return body as T;
}
const plannedJobs = async () =>
  (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs.jobs'))[0].n;

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ path: 'ops', guard: new TokenGuard() })],
    ...recording('admin'),
    options: {
      pollingCheck: 0.2,
      schedules: [
        { name: 'hourly', task: 'record', cron: '0 * * * *', payload: { from: 'hourly' } },
      ],
    },
  });
});

afterAll(() => server.close());

it('pauses, resumes and runs a schedule now from the admin API, behind the guard and the action header', async () => {
  expect(await plannedJobs()).toBeGreaterThan(0);
  const paused = await json<{ schedule: ScheduleInfo }>(post('hourly/pause'));
  expect(paused.schedule).toEqual(expect.objectContaining({ name: 'hourly', paused: true }));
  expect(await plannedJobs()).toBe(0);

  const { job } = await json<{ job: JobInfo }>(post('hourly/trigger'));
  expect(job.task).toBe('record');
  await waitFor('the triggered run', () => executions.some((run) => run.id === job.id));
  expect(executions.find((run) => run.id === job.id)?.payload).toEqual({ from: 'hourly' });

  const resumed = await json<{ schedule: ScheduleInfo }>(post('hourly/resume'));
  expect(resumed.schedule.paused).toBe(false);
  expect(await plannedJobs()).toBeGreaterThan(0);
});

it('refuses an unknown schedule (404), a bad name (400), a missing action header (403) and a request the guard rejects', async () => {
  expect((await post('nope/pause')).status).toBe(404);
  expect((await post('has%20space/trigger')).status).toBe(400);
  expect((await post('hourly/pause', {})).status).toBe(403);
  const unguarded = await fetch(`${server.url}/ops/api/schedules/hourly/pause`, {
    method: 'POST',
    headers: { 'x-jobs-admin': '1' },
  });
  expect(unguarded.status).toBe(403);
  expect(
    (
      await json<{ schedules: ScheduleInfo[] }>(
        fetch(`${server.url}/ops/api/schedules`, { headers: { authorization: TOKEN } }),
      )
    ).schedules[0].paused,
  ).toBe(false);
});
