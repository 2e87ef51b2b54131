import { randomBytes, randomUUID } from 'node:crypto';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { CronPlannerService, JobsAdminModule, JobsMetricsModule } from 'nestjs-pg-jobs';
import type { JobInfo, ListedJobInfo } from 'nestjs-pg-jobs';
import { PREVIEW_CHARS } from '../../libs/jobs/src/admin/admin.sql.js';
import { FlakyTask } from '../support/flaky-task.js';
import { GatedTask, started } from '../support/gated-task.js';
import { LifeTask } from '../support/life-task.js';
import { json, startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const TOKEN = 'Bearer let-me-in';

/** The kind of guard docs/operations.md asks for: here, a fixed bearer token. */
class TokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest().headers.authorization === TOKEN;
  }
}

let server: HttpJobsApp;
const api = (path: string, init: RequestInit = {}) =>
  fetch(`${server.url}/ops/jobs/api/${path}`, {
    ...init,
    headers: { authorization: TOKEN, ...(init.headers as Record<string, string>) },
  });
const post = (path: string) => api(path, { method: 'POST', headers: { 'x-jobs-admin': '1' } });
const stateOf = async (id: string) => (await server.queue.getJob(id))?.state;
const ended = (id: string, state: string) =>
  waitFor(`job ${id} to be ${state}`, async () => (await stateOf(id)) === state);

const ids: Record<string, string> = {};
beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ path: '/ops/jobs/', guard: new TokenGuard() })],
    tasks: [FlakyTask, GatedTask, LifeTask],
    options: { pollingCheck: 0.1, maxRetries: 0, allowUnknownTasks: true, concurrency: 2 },
  });
  const add = async (payload: object, extra: object = {}) =>
    (await server.queue.addJob({ task: 'flaky', payload, ...extra })).id;
  ids.done1 = await add({});
  ids.done2 = await add({});
  ids.failed = await add({ failUntilAttempt: 1, message: 'the printer is on fire' });
  ids.later = await add({}, { waitUntil: new Date(Date.now() + 3600_000) });
  ids.orphan = (await server.queue.addJob({ task: 'nobodyRunsThis' })).id;
  await Promise.all([ended(ids.done1, 'completed'), ended(ids.done2, 'completed')]);
  await ended(ids.failed, 'failed');
  // The job nobody runs has been due for a minute.
  await db.query(`UPDATE jobs.jobs SET "waitUntil" = now() - interval '60 seconds' WHERE id = $1`, [
    ids.orphan,
  ]);
});
afterAll(() => server?.close());

describe('GET <path> serves the dashboard page', () => {
  it('as HTML under a content security policy that allows only its own script', async () => {
    const res = await fetch(`${server.url}/ops/jobs`, { headers: { authorization: TOKEN } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'sha256-[^']+'/);
    expect(await res.text()).toContain('<title>Jobs dashboard</title>');
  });
});

describe('GET api/stats', () => {
  it('counts pending, due, active, completed and failed per task, and the oldest due wait', async () => {
    const { tasks, totals } = await json(api('stats'));
    const byTask = Object.fromEntries(tasks.map((line: { task: string }) => [line.task, line]));
    expect(byTask.flaky).toMatchObject({ pending: 1, due: 0, active: 0, completed: 2, failed: 1 });
    expect(byTask.flaky.oldestPendingAgeSeconds).toBeNull();
    expect(byTask.nobodyRunsThis).toMatchObject({ pending: 1, due: 1, completed: 0 });
    expect(byTask.nobodyRunsThis.oldestPendingAgeSeconds).toBeGreaterThanOrEqual(59);
    expect(byTask.nobodyRunsThis.oldestPendingAgeSeconds).toBeLessThan(600);
    expect(totals).toMatchObject({ pending: 2, due: 1, completed: 2, failed: 1 });
  });

  it('counts the jobs that ended in the last ?minutes= (60 by default), never the whole history', async () => {
    const completedOf = (body: { tasks: { task: string; completed: number }[] }) =>
      body.tasks.find((line) => line.task === 'flaky')?.completed;
    await db.query(
      `UPDATE jobs."jobHistory" SET "completedAt" = now() - interval '2 hours' WHERE id = $1`,
      [ids.done1],
    );
    try {
      const recent = await json(api('stats'));
      expect(recent.minutes).toBe(60);
      expect(completedOf(recent)).toBe(1);
      expect(completedOf(await json(api('stats?minutes=180')))).toBe(2);
    } finally {
      await db.query(`UPDATE jobs."jobHistory" SET "completedAt" = now() WHERE id = $1`, [
        ids.done1,
      ]);
    }
  });

  it('refuses a query parameter it does not take', async () => {
    const body = await json(api('stats?verbose=1'), 400);
    expect(body.message).toMatch(/unknown query parameter "verbose"/);
  });
});

describe('GET api/jobs', () => {
  it('lists failed jobs with previews of their errors and payloads', async () => {
    const { jobs } = await json<{ jobs: ListedJobInfo[] }>(api('jobs?state=failed'));
    expect(jobs).toEqual([
      expect.objectContaining({
        id: ids.failed,
        state: 'failed',
        lastErrorPreview: 'the printer is on fire',
        payloadPreview: '{"message": "the printer is on fire", "failUntilAttempt": 1}',
      }),
    ]);
  });

  it('lists pending jobs in claim order, filtered by task', async () => {
    const all = await json<{ jobs: JobInfo[] }>(api('jobs?state=pending'));
    expect(all.jobs.map((job) => job.id)).toEqual([ids.orphan, ids.later]);
    const flaky = await json<{ jobs: JobInfo[] }>(api('jobs?state=pending&task=flaky'));
    expect(flaky.jobs.map((job) => job.id)).toEqual([ids.later]);
  });

  it('pages with limit and offset, saying whether there is more', async () => {
    const first = await json(api('jobs?state=completed&limit=1'));
    const second = await json(api('jobs?state=completed&limit=1&offset=1'));
    expect(first.hasMore).toBe(true);
    expect(second.hasMore).toBe(false);
    expect([first.jobs[0].id, second.jobs[0].id].sort()).toEqual([ids.done1, ids.done2].sort());
  });

  it('lists every job without a state', async () => {
    const { jobs } = await json<{ jobs: JobInfo[] }>(api('jobs'));
    expect(jobs.map((job) => job.id).sort()).toEqual(Object.values(ids).sort());
  });

  it.each([
    ['state=bogus', /"state" must be one of blocked, pending, active, suspended, completed/],
    ['limit=0', /"limit" must be an integer from 1 to 200; got "0"/],
    ['limit=1000', /"limit" must be an integer from 1 to 200/],
    ['limit=2.5', /"limit" must be an integer/],
    ['offset=-1', /"offset" must be an integer from 0/],
    ['task=no%20spaces', /"task" must be a task name/],
    ['state=failed&state=completed', /"state" must be one of/],
    ['sort=id', /unknown query parameter "sort"/],
  ])('answers 400 to ?%s', async (query, message) => {
    const body = await json(api(`jobs?${query}`), 400);
    expect(body.message).toMatch(message);
  });
});

describe('GET api/jobs/:id', () => {
  it('shows the job and its history row', async () => {
    const { job, history } = await json(api(`jobs/${ids.failed}`));
    expect(job).toMatchObject({ id: ids.failed, task: 'flaky', state: 'failed', attempt: 1 });
    expect(history).toMatchObject({ id: ids.failed, state: 'failed', attempt: 1 });
    expect(history.executedBy).toEqual(expect.any(String));
  });

  it('answers 404 for an unknown job and 400 for a malformed id', async () => {
    expect((await json(api(`jobs/${randomUUID()}`), 404)).message).toMatch(/No job/);
    expect((await json(api('jobs/42'), 400)).message).toMatch(
      /"id" must be a job id \(a UUID\); got "42"/,
    );
  });
});

describe('POST api/jobs/:id/retry', () => {
  it('queues a failed job once more, which then completes on its next attempt', async () => {
    const id = (await server.queue.addJob({ task: 'flaky', payload: { failUntilAttempt: 1 } })).id;
    await ended(id, 'failed');
    const { job } = await json(post(`jobs/${id}/retry`));
    // The answer is the job as it is by then: queued, or already picked up.
    expect(job.id).toBe(id);
    expect(['pending', 'active', 'completed']).toContain(job.state);
    await ended(id, 'completed');
    expect(await server.queue.getJob(id)).toMatchObject({ state: 'completed', attempt: 2 });
  });

  it('refuses (409) a job that did not fail, 404 an unknown one, 400 a bad id', async () => {
    expect((await json(post(`jobs/${ids.done1}/retry`), 409)).message).toMatch(
      /is completed and cannot be retried/,
    );
    await json(post(`jobs/${randomUUID()}/retry`), 404);
    await json(post('jobs/not-a-uuid/retry'), 400);
  });

  it('refuses (403) a request without the X-Jobs-Admin header', async () => {
    const body = await json(api(`jobs/${ids.failed}/retry`, { method: 'POST' }), 403);
    expect(body.message).toMatch(/X-Jobs-Admin: 1/);
    expect(await stateOf(ids.failed)).toBe('failed');
  });
});

describe('POST api/jobs/:id/cancel', () => {
  it('cancels a pending job, and then refuses (409) to cancel it again', async () => {
    const id = (
      await server.queue.addJob({ task: 'flaky', waitUntil: new Date(Date.now() + 3600_000) })
    ).id;
    expect((await json(post(`jobs/${id}/cancel`))).job).toMatchObject({ id, state: 'cancelled' });
    expect((await json(post(`jobs/${id}/cancel`), 409)).message).toMatch(
      /is cancelled and cannot be cancelled/,
    );
    await json(post(`jobs/${randomUUID()}/cancel`), 404);
    await json(post('jobs/1/cancel'), 400);
  });
});

describe('POST api/jobs/:id/run', () => {
  it('makes a pending job that waits for its time due now, and then refuses (409): it ran', async () => {
    const id = (
      await server.queue.addJob({ task: 'flaky', waitUntil: new Date(Date.now() + 3600_000) })
    ).id;
    const { job } = await json(post(`jobs/${id}/run`));
    expect(job.id).toBe(id);
    expect(new Date(job.waitUntil ?? 0).getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    await ended(id, 'completed');
    expect((await json(post(`jobs/${id}/run`), 409)).message).toBe(
      `Job ${id} is completed and cannot be run now: only a pending job that is not due yet can.`,
    );
    await json(post(`jobs/${randomUUID()}/run`), 404);
  });
});

describe('GET api/throughput', () => {
  it('gives one entry per minute, counting the jobs that ended in it', async () => {
    const { minutes } = await json(api('throughput?minutes=5'));
    expect(minutes).toHaveLength(5);
    const completed = minutes.reduce(
      (sum: number, m: { completed: number }) => sum + m.completed,
      0,
    );
    const [{ n }] = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs."jobHistory" WHERE state = 'completed'`,
    );
    expect(completed).toBe(n);
  });

  it.each(['minutes=0', 'minutes=abc', 'minutes=99999', 'from=1'])(
    'answers 400 to ?%s',
    async (query) => {
      await json(api(`throughput?${query}`), 400);
    },
  );
});

describe('access', () => {
  it('answers 403 to every route when the guard refuses', async () => {
    for (const path of ['', '/api/stats', '/api/jobs']) {
      expect((await fetch(`${server.url}/ops/jobs${path}`)).status).toBe(403);
    }
    const res = await fetch(`${server.url}/ops/jobs/api/jobs/${ids.failed}/retry`, {
      method: 'POST',
      headers: { 'x-jobs-admin': '1' },
    });
    expect(res.status).toBe(403);
  });

  async function withNodeEnv<T>(value: string, fn: () => Promise<T>): Promise<T> {
    const previous = process.env.NODE_ENV;
    process.env.NODE_ENV = value;
    try {
      return await fn();
    } finally {
      process.env.NODE_ENV = previous;
    }
  }

  it.each([
    ['production', 404],
    ['development', 200],
  ])('without a guard, with NODE_ENV=%s, answers %i', async (env, status) => {
    const unguarded = await withNodeEnv(env, () =>
      startHttpJobsApp(db.url, {
        imports: [JobsAdminModule.forRoot()],
        options: { runJobs: false },
      }),
    );
    try {
      expect((await fetch(`${unguarded.url}/jobs-admin/api/stats`)).status).toBe(status);
    } finally {
      await unguarded.close();
    }
  });
});

it.each(['', '/', '../etc', 'a b', 'x?y'])(
  'refuses the dashboard path %p at module build',
  (path) => {
    expect(() => JobsAdminModule.forRoot({ path, guard: new TokenGuard() })).toThrow(
      /JobsAdminModule option "path" must be a URL path/,
    );
  },
);

it.each([
  ['JobsAdminModule', () => JobsAdminModule.forRoot({ guard: new TokenGuard() })],
  ['JobsMetricsModule', () => JobsMetricsModule.forRoot()],
])('fails the boot of %s without a JobsModule, saying so', async (name, module) => {
  const compiled = await Test.createTestingModule({ imports: [module()] })
    .setLogger(false as never)
    .compile();
  await expect(compiled.init()).rejects.toThrow(
    `${name} found no JobsModule in this app: import JobsModule.forRoot()`,
  );
  await compiled.close();
});

// Last: the schedule plans jobs of its own, which the counts above do not expect.
describe('GET api/schedules', () => {
  it('lists the schedules with their definitions', async () => {
    await server.app.get(CronPlannerService).setSchedule({
      name: 'reports',
      task: 'flaky',
      cron: '*/5 * * * *',
      timezone: 'Europe/Berlin',
      payload: { n: 1 },
    });
    const { schedules } = await json(api('schedules'));
    expect(schedules).toEqual([
      expect.objectContaining({
        name: 'reports',
        task: 'flaky',
        cron: '*/5 * * * *',
        timezone: 'Europe/Berlin',
        payload: { n: 1 },
      }),
    ]);
    await json(api('schedules?all=1'), 400);
  });
});

describe('POST api/jobs/:id/cancel and retry, of running and cancelled jobs', () => {
  it('cancels a running job, which can then be retried', async () => {
    const { id } = await server.queue.addJob({ task: 'gated' });
    await waitFor('the job to start', () => started.has(id));
    expect((await json(post(`jobs/${id}/cancel`))).job).toMatchObject({ id, state: 'cancelled' });
    const { job } = await json(post(`jobs/${id}/retry`));
    expect(job.id).toBe(id);
    expect(['pending', 'active', 'completed']).toContain(job.state);
    // The cancel's abort opened the task's gate for good: the retry runs through.
    await ended(id, 'completed');
    expect(await server.queue.getJob(id)).toMatchObject({ attempt: 2 });
  });
});

describe('POST api/jobs/retry and api/jobs/cancel: every job a filter takes', () => {
  const failedForGood = async (task: string) => {
    const [row] = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs."jobHistory" h
       WHERE task = $1 AND state = 'failed' AND NOT EXISTS (SELECT 1 FROM jobs.jobs q WHERE q.id = h.id)`,
      [task],
    );
    return row.n;
  };

  it('retries the failed jobs of a task, and says how many', async () => {
    const { id } = await server.queue.addJob({ task: 'flaky', payload: { failUntilAttempt: 1 } });
    await ended(id, 'failed');
    const expected = await failedForGood('flaky');
    expect(expected).toBeGreaterThanOrEqual(1);
    expect(await json(post('jobs/retry?task=flaky&state=failed'))).toEqual({ retried: expected });
    await ended(id, 'completed');
    expect(await failedForGood('flaky')).toBe(0);
  });

  it('cancels the pending jobs of a task, and says how many', async () => {
    const later = new Date(Date.now() + 3600_000);
    const added = await server.queue.addJobs([
      { task: 'bulkCancelled', waitUntil: later },
      { task: 'bulkCancelled', waitUntil: later },
      { task: 'bulkKept', waitUntil: later },
    ]);
    expect(await json(post('jobs/cancel?task=bulkCancelled&state=pending,active'))).toEqual({
      cancelled: 2,
    });
    expect(await stateOf(added[0].id)).toBe('cancelled');
    expect(await stateOf(added[2].id)).toBe('pending');
  });

  it('cancels only the jobs of the queue asked for', async () => {
    const { id } = await server.queue.addJob({
      task: 'queueFiltered',
      waitUntil: new Date(Date.now() + 3600_000),
    });
    expect(await json(post('jobs/cancel?queue=elsewhere'))).toEqual({ cancelled: 0 });
    expect(await stateOf(id)).toBe('pending');
    expect(await json(post('jobs/cancel?task=queueFiltered&queue=default'))).toEqual({
      cancelled: 1,
    });
    expect(await stateOf(id)).toBe('cancelled');
  });

  it.each([
    ['retry?state=completed', /"state" must be one or more of failed, interrupted, cancelled/],
    ['cancel?state=failed', /"state" must be one or more of blocked, pending, suspended, active/],
    ['cancel?state=pending,', /"state" must be one or more of blocked, pending, suspended, active/],
    ['retry?before=yesterday', /"before" must be an ISO 8601 time/],
    ['retry?before=2026-01-31T12:00:00', /"before" must be an ISO 8601 time/],
    ['cancel?task=no%20spaces', /"task" must be a task name/],
    ['cancel?queue=no%20spaces', /"queue" must be a queue name/],
    ['cancel?limit=5', /unknown query parameter "limit"/],
  ])('answers 400 to %s, changing nothing', async (path, message) => {
    const { id } = await server.queue.addJob({
      task: 'bulkKept',
      waitUntil: new Date(Date.now() + 3600_000),
    });
    expect((await json(post(`jobs/${path}`), 400)).message).toMatch(message);
    expect(await stateOf(id)).toBe('pending');
  });

  it('refuses (403) a bulk request without the X-Jobs-Admin header', async () => {
    const body = await json(api('jobs/cancel', { method: 'POST' }), 403);
    expect(body.message).toMatch(/X-Jobs-Admin: 1/);
  });
});

describe("a job's result, snooze and cancellation", () => {
  const listed = async (query: string, id: string) =>
    (await json<{ jobs: ListedJobInfo[] }>(api(`jobs?${query}`))).jobs.find((job) => job.id === id);
  const completedWith = async (result: unknown) => {
    const { id } = await server.queue.addJob({ task: 'life', payload: { result } });
    await ended(id, 'completed');
    return id;
  };

  it('lists a result as a preview of its JSON, cut when long, and gives it whole in the detail', async () => {
    const small = { html: '<script>alert(1)</script>' };
    const long = { text: 'x'.repeat(1000) };
    const [smallId, longId] = [await completedWith(small), await completedWith(long)];

    // As PostgreSQL writes jsonb as text.
    expect(await listed('state=completed&task=life', smallId)).toMatchObject({
      resultPreview: '{"html": "<script>alert(1)</script>"}',
    });
    const preview = (await listed('state=completed&task=life', longId))!.resultPreview!;
    expect(preview).toBe(`{"text": "${long.text}`.slice(0, PREVIEW_CHARS - 1) + '…');
    expect((await listed('task=life', longId))!.resultPreview).toBe(preview);
    expect((await json(api(`jobs/${longId}`))).job.result).toEqual(long);
    expect((await json(api(`jobs/${smallId}`))).job.result).toEqual(small);
  });

  it('does not read a result stored in more than 8 kB for a list: its preview is "…" alone', async () => {
    // Random text does not compress: stored, it stays about as large as it is.
    const large = { blob: randomBytes(12_000).toString('base64') };
    const id = await completedWith(large);
    const row = await listed('state=completed&task=life', id);
    expect(row).toMatchObject({ resultPreview: '…' });
    expect(row).not.toHaveProperty('result');
    expect((await json(api(`jobs/${id}`))).job.result).toEqual(large);
  });

  it('counts and lists a job waiting out a snooze, with when it is due again', async () => {
    const { id } = await server.queue.addJob({ task: 'life', payload: { snooze: 3600 } });
    const row = await waitFor('the snooze', async () => {
      const found = await listed('state=pending&task=life', id);
      return found?.snoozedUntil ? found : undefined;
    });
    const { job, history } = await json(api(`jobs/${id}`));
    expect(history).toMatchObject({ state: 'snoozed', attempt: 1, snoozes: 1 });
    expect(job).toMatchObject({ state: 'pending', attempt: 0 });
    expect(row).toMatchObject({ snoozedUntil: job.waitUntil, snoozes: 1 });
    expect(new Date(row.snoozedUntil!).getTime()).toBeGreaterThan(Date.now() + 3000_000);
    const { tasks, totals } = await json(api('stats'));
    expect(tasks.find((line: { task: string }) => line.task === 'life')).toMatchObject({
      pending: 1,
      snoozed: 1,
    });
    expect(totals.snoozed).toBe(1);
    // A job that is not snoozed says so.
    expect((await listed('state=pending', ids.later))!.snoozedUntil).toBeNull();
  });

  it('counts the snoozes of a job over its whole life, not just its last attempt', async () => {
    const { id } = await server.queue.addJob({
      task: 'life',
      payload: { snooze: 0, times: 2, result: 'awake' },
    });
    await ended(id, 'completed');
    const { job, history } = await json(api(`jobs/${id}`));
    expect(job).toMatchObject({ state: 'completed', attempt: 1, result: 'awake' });
    expect(history).toMatchObject({ state: 'completed', snoozes: 2 });
    expect(await listed('state=completed&task=life', id)).toMatchObject({
      snoozes: 2,
      resultPreview: '"awake"',
    });
  });

  it('lists a cancelled job with when it was cancelled, and counts it', async () => {
    const { id } = await server.queue.addJob({
      task: 'life',
      waitUntil: new Date(Date.now() + 3600_000),
    });
    await json(post(`jobs/${id}/cancel`));
    const row = await listed('state=cancelled&task=life', id);
    expect(row).toMatchObject({ state: 'cancelled', completedAt: expect.any(String) });
    const { tasks } = await json(api('stats'));
    expect(tasks.find((line: { task: string }) => line.task === 'life')).toMatchObject({
      cancelled: 1,
    });
  });
});
