import { JobsAdminModule } from 'nestjs-pg-jobs';
import type { ListedJobInfo } from 'nestjs-pg-jobs';
import { FlakyTask } from '../support/flaky-task.js';
import { json, startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let server: HttpJobsApp;

const api = (path: string, init?: RequestInit) =>
  fetch(`${server.url}/jobs-admin/api/${path}`, init);
const list = (query: string): Promise<{ jobs: ListedJobInfo[]; next: string | null }> =>
  json(api(`jobs?${query}`));
const count = (query: string): Promise<{ count: number; capped: boolean }> =>
  json(api(`jobs/count?${query}`));
const idsOf = async (query: string) => (await list(query)).jobs.map((job) => job.id).sort();

const REFUSED = 'connect ECONNREFUSED 10.0.0.1:5432';
const ids = { refused: [] as string[], full: [] as string[], grouped: '', done: '' };

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ guard: { canActivate: () => true } })],
    tasks: [FlakyTask],
    options: { pollingCheck: 0.1, maxRetries: 0, concurrency: 4 },
  });
  const fail = async (message: string, extra: object = {}) =>
    (
      await server.queue.addJob({
        task: 'flaky',
        payload: { failUntilAttempt: 1, message },
        ...extra,
      })
    ).id;
  for (let i = 0; i < 12; i++) ids.refused.push(await fail(REFUSED));
  for (let i = 0; i < 3; i++) ids.full.push(await fail('disk 100% full_now'));
  ids.grouped = await fail(REFUSED, { groupKey: 'tenant-7' });
  ids.done = (await server.queue.addJob({ task: 'flaky' })).id;
  await waitFor('every job to end', async () => {
    const [{ n }] = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs."jobHistory" WHERE "completedAt" IS NOT NULL`,
    );
    return n === 17;
  });
});
afterAll(() => server?.close());

describe('GET api/jobs searches', () => {
  it('finds failed jobs by a part of their error, in any case', async () => {
    expect(await idsOf('state=failed&error=econnREFUSED')).toEqual(
      [...ids.refused, ids.grouped].sort(),
    );
    expect(await count('state=failed&error=econnREFUSED')).toEqual({ count: 13, capped: false });
  });

  it('takes % and _ in the error text as plain characters', async () => {
    expect(await idsOf('error=100%25%20full_')).toEqual([...ids.full].sort());
    expect(await idsOf('error=%25')).toEqual([...ids.full].sort());
    // "_" alone matches only errors that have one (a pattern's _ would match any character).
    expect(await idsOf('error=_')).toEqual([...ids.full].sort());
  });

  it('finds jobs by their group, and by their creation time', async () => {
    expect(await idsOf('groupKey=tenant-7')).toEqual([ids.grouped]);
    const hourAgo = new Date(Date.now() - 3600_000).toISOString();
    const inAnHour = new Date(Date.now() + 3600_000).toISOString();
    expect(await idsOf(`after=${inAnHour}`)).toEqual([]);
    expect(await idsOf(`before=${hourAgo}`)).toEqual([]);
    expect(await idsOf(`after=${hourAgo}&before=${inAnHour}&state=completed`)).toEqual([ids.done]);
  });

  it('finds a job by its id or the start of it, in any case', async () => {
    const id = ids.refused[4];
    expect(await idsOf(`id=${id}`)).toEqual([id]);
    expect(await idsOf(`id=${id.toUpperCase()}`)).toEqual([id]);
    const prefix = id.slice(0, 14);
    const all = [...ids.refused, ...ids.full, ids.grouped, ids.done];
    expect(await idsOf(`id=${prefix}`)).toEqual(all.filter((one) => one.startsWith(prefix)).sort());
  });

  it("finds a flow's jobs", async () => {
    const flow = await server.queue.addFlow({
      name: 'search',
      jobs: [
        { ref: 'a', task: 'flaky' },
        { ref: 'b', task: 'flaky', dependsOn: ['a'] },
      ],
    });
    await waitFor(
      'the flow to end',
      async () => (await server.queue.getJob(flow.jobs.b))?.state === 'completed',
    );
    expect(await idsOf(`flow=${flow.flowId}`)).toEqual([flow.jobs.a, flow.jobs.b].sort());
    expect(await count(`flow=${flow.flowId}&state=completed`)).toEqual({ count: 2, capped: false });
  });
});

describe('GET api/jobs pages with a cursor', () => {
  async function walk(query: string, limit: number): Promise<string[]> {
    const seen: string[] = [];
    let next: string | null = null;
    do {
      const page: { jobs: ListedJobInfo[]; next: string | null } = await list(
        `${query}&limit=${limit}${next ? `&cursor=${next}` : ''}`,
      );
      expect(page.jobs.length).toBeLessThanOrEqual(limit);
      seen.push(...page.jobs.map((job) => job.id));
      next = page.next;
    } while (next);
    return seen;
  }

  it('gives every match once, in the order of one page, however the pages are cut', async () => {
    const whole = (await list('state=failed&limit=200')).jobs.map((job) => job.id);
    expect(whole).toHaveLength(16);
    for (const limit of [1, 3, 7]) expect(await walk('state=failed', limit)).toEqual(whole);
  });

  it('keeps jobs that ended in the same microsecond, or microseconds apart in one millisecond', async () => {
    // A burst of failures: a millisecond cursor (a JavaScript Date) would skip some of them.
    await db.query(
      `UPDATE jobs."jobHistory" h SET "completedAt" = '2026-12-05 04:00:00.123+00'::timestamptz
         + make_interval(secs => (n.i % 4) * 0.0001)
       FROM (SELECT id, row_number() OVER (ORDER BY id) AS i FROM jobs."jobHistory"
             WHERE state = 'failed') AS n
       WHERE h.id = n.id`,
    );
    const whole = (await list('state=failed&limit=200')).jobs.map((job) => job.id);
    expect(new Set(whole).size).toBe(16);
    for (const limit of [1, 2, 5]) expect(await walk('state=failed', limit)).toEqual(whole);
    for (const limit of [1, 4]) {
      expect(await walk('', limit)).toEqual((await list('limit=200')).jobs.map((job) => job.id));
    }
  });

  it('pages through queued jobs in claim order', async () => {
    const later = new Date(Date.now() + 3600_000);
    const queued = [];
    for (let i = 0; i < 9; i++) {
      queued.push(
        (await server.queue.addJob({ task: 'flaky', waitUntil: later, priority: i % 2 })).id,
      );
    }
    const whole = (await list('state=pending&limit=200')).jobs.map((job) => job.id);
    expect([...whole].sort()).toEqual([...queued].sort());
    for (const limit of [1, 4]) expect(await walk('state=pending', limit)).toEqual(whole);
    await server.queue.cancelJobs({ state: 'pending' });
  });
});

describe('bulk actions take what the search counted', () => {
  it('retries every failed job whose error matches, and only them', async () => {
    const query = 'state=failed&error=ECONNREFUSED&groupKey=tenant-7';
    expect(await count(query)).toEqual({ count: 1, capped: false });
    const res = await api(`jobs/retry?${query}`, {
      method: 'POST',
      headers: { 'x-jobs-admin': '1' },
    });
    expect(await res.json()).toEqual({ retried: 1 });
    // Its second attempt succeeds (failUntilAttempt: 1).
    await waitFor(
      'the retried job to end',
      async () => (await server.queue.getJob(ids.grouped))?.state === 'completed',
    );
    expect(await count('state=failed&error=ECONNREFUSED')).toEqual({ count: 12, capped: false });
  });
});

describe('bad searches are refused with a 400 that says why', () => {
  it.each([
    ['id=xyz', /"id" must be a job id or its start/],
    ['id=0193a4f27', /"id" must be a job id or its start/],
    [`error=${'x'.repeat(201)}`, /"error" must be text of 1 to 200 characters/],
    [`uniqueKey=${'k'.repeat(1001)}`, /"uniqueKey" must be a key of 1 to 1000 characters/],
    ['flow=abc', /"flow" must be a flow id/],
    ['after=yesterday', /"after" must be an ISO 8601 time/],
    ['state=failed&cursor=bm9wZQ', /"cursor" must be the "next" of a page of the same list/],
    [
      `state=failed&cursor=${Buffer.from(JSON.stringify({ priority: 0, waitUntil: 'infinity', seq: '1' })).toString('base64url')}`,
      /"cursor" must be the "next" of a page of the same list/,
    ],
    ['tenant=a', /unknown query parameter "tenant"/],
  ])('%s', async (query, message) => {
    const res = await api(`jobs?${query}`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(message);
  });
});

describe('GET api/jobs finds a job by its unique key, exactly', () => {
  const later = () => new Date(Date.now() + 3600_000);

  it('finds the queued job that holds the key, then, once it ran, its history row', async () => {
    const { id } = await server.queue.addJob({
      task: 'flaky',
      uniqueKey: 'invoice:42',
      waitUntil: later(),
    });
    await server.queue.addJob({ task: 'flaky', uniqueKey: 'invoice:420', waitUntil: later() });
    expect(await idsOf('uniqueKey=invoice%3A42')).toEqual([id]);
    expect(await count('uniqueKey=invoice%3A42')).toEqual({ count: 1, capped: false });
    expect(await idsOf('state=pending&uniqueKey=invoice%3A42')).toEqual([id]);
    // Exact: neither a part of a key nor another case matches.
    expect(await idsOf('uniqueKey=invoice')).toEqual([]);
    expect(await idsOf('uniqueKey=INVOICE%3A42')).toEqual([]);

    await db.query(`UPDATE jobs.jobs SET "waitUntil" = now() WHERE id = $1`, [id]);
    await waitFor('the job to complete', async () => {
      return (await server.queue.getJob(id))?.state === 'completed';
    });
    // The queue freed the key at the claim; history keeps it.
    expect(await db.query(`SELECT 1 FROM jobs.jobs WHERE "uniqueKey" = 'invoice:42'`)).toEqual([]);
    const { jobs } = await list('uniqueKey=invoice%3A42');
    expect(jobs.map((job) => [job.id, job.state, job.uniqueKey])).toEqual([
      [id, 'completed', 'invoice:42'],
    ]);
    expect(await idsOf('state=completed&uniqueKey=invoice%3A42')).toEqual([id]);
    expect(await server.queue.getJob(id)).toMatchObject({ uniqueKey: 'invoice:42' });
  });

  it('finds a job waiting for its retry by the key its first attempt kept, as pending, once', async () => {
    const { id } = await server.queue.addJob({
      task: 'flaky',
      payload: { failUntilAttempt: 1, message: 'first try' },
      uniqueKey: 'refund:9',
      // The retry waits out the default backoff (a minute): pending while the test looks.
      maxRetries: 1,
    });
    await waitFor('the first attempt to fail', async () => {
      return (await db.historyOf(id))?.state === 'failed';
    });
    expect(await server.queue.getJob(id)).toMatchObject({
      state: 'pending',
      uniqueKey: 'refund:9',
    });
    const { jobs } = await list('uniqueKey=refund%3A9');
    expect(jobs.map((job) => [job.id, job.state, job.uniqueKey])).toEqual([
      [id, 'pending', 'refund:9'],
    ]);
    expect(await idsOf('state=pending&uniqueKey=refund%3A9')).toEqual([id]);
    expect(await idsOf('state=failed&uniqueKey=refund%3A9')).toEqual([]);
    // The retry then runs and keeps the key: the claim after the first does not clear it.
    await db.query(`UPDATE jobs.jobs SET "waitUntil" = now() WHERE id = $1`, [id]);
    await waitFor('the retry to complete', async () => {
      return (await server.queue.getJob(id))?.state === 'completed';
    });
    expect(await idsOf('uniqueKey=refund%3A9')).toEqual([id]);
  });

  it('finds a job waiting for its retry by the error of its attempt before, as pending, once', async () => {
    const { id } = await server.queue.addJob({
      task: 'flaky',
      payload: { failUntilAttempt: 1, message: 'gateway timeout 504 (first try)' },
      // The retry waits out the default backoff (a minute): pending while the test looks.
      maxRetries: 1,
    });
    await waitFor('the first attempt to fail', async () => {
      return (await db.historyOf(id))?.state === 'failed';
    });
    expect(await idsOf('state=pending&error=GATEWAY%20timeout')).toEqual([id]);
    expect(await idsOf('error=gateway%20timeout')).toEqual([id]);
    expect(await idsOf('state=failed&error=gateway%20timeout')).toEqual([]);
    expect(await count('state=pending&error=gateway%20timeout')).toEqual({
      count: 1,
      capped: false,
    });
    await server.queue.cancelJob(id);
  });

  it('cancels by key, as a bulk filter, what the search by key counted', async () => {
    const { id } = await server.queue.addJob({
      task: 'flaky',
      uniqueKey: 'export:3',
      waitUntil: later(),
    });
    expect(await server.queue.cancelJobs({ uniqueKey: 'export:3' })).toBe(1);
    expect(await server.queue.getJob(id)).toMatchObject({
      state: 'cancelled',
      uniqueKey: 'export:3',
    });
    expect(await idsOf('state=cancelled&uniqueKey=export%3A3')).toEqual([id]);
  });
});
