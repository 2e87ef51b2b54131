/**
 * `npm run bench:dashboard`: how fast every route of the dashboard's API answers on a big history.
 * A fresh database gets 1,000,000 history rows (BENCH_HISTORY_ROWS) spread over the last 24 hours
 * (mostly completed, some failed, cancelled and interrupted, a few running, twenty tasks in two
 * queues, two thirds of the rows with a group key) and a queue of 100,000 jobs; then an app with
 * `JobsAdminModule` (running no jobs, so nothing changes underneath) answers each route
 * BENCH_CALLS times (default 50), one call at a time, over HTTP. The failed rows' errors vary as a
 * real history's do: most are a refused connection (to one of 256 addresses), some a timeout, a
 * few a printer on fire, and ten a tenant's quota; so the searches by error text match many rows,
 * a handful, or none. Prints p50 and p95 per route and whether p95 is under 100 ms.
 * The per-minute rows (migration 18) are filled for the day as the instances' writer would have
 * left them, and the writer then runs as on an instance that runs jobs, so that
 * `durations?minutes=1440` and the queue depth routes read what they would in production.
 * `BENCH_EXPLAIN=1` also prints the executed plans of the statements the page polls and of the
 * searches and counts, with their values bound as the service binds them. The library's error
 * search index (`errorSearchIndex`, a trigram index) is built once history is filled, as the
 * upkeep's next round would; `BENCH_ERROR_SEARCH_INDEX=0` leaves it out, to measure what it changes.
 */
import 'reflect-metadata';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { JobsAdminModule, JobsModule, RetentionService } from 'nestjs-pg-jobs';
import { createDatabase, resolveDatabaseServer } from '../tools/dev-database.js';
import { MinuteStatsRecorder, adminSql, minuteStatsSql, toSchemaName } from './internals.js';
import { percentile } from './stats.js';

const HISTORY_ROWS = Number(process.env.BENCH_HISTORY_ROWS ?? 1_000_000);
const QUEUED_JOBS = 100_000;
const CALLS = Number(process.env.BENCH_CALLS ?? 50);
const WARM_UP = 5;
const TARGET_P95_MS = 100;

/** Error texts of the searches: in 15,000 failed rows, in 10, in none. */
const COMMON_ERROR = 'ECONNREFUSED';
const RARE_ERROR = 'quota exceeded';
const NO_ERROR = 'disk full';
/** A group key that about 130 failed rows carry (of 20,000). */
const GROUP_KEY = 'tenant42';

const errorSearchIndex = process.env.BENCH_ERROR_SEARCH_INDEX !== '0';

async function fill(client: pg.Client, upkeep: () => Promise<unknown>): Promise<void> {
  const started = performance.now();
  // Each job took 20 ms to 2 s. Every 50th row failed (20,000 of a million): 10 of a tenant's
  // quota, 990 of a printer on fire, 4,000 of a timeout and 15,000 of a refused connection. Tasks 0
  // to 4 run in the `emails` queue; two rows in three have a group key, of 101 tenants (101, not
  // 100, so that the failed rows, every 50th, spread over them all); one in a hundred a unique key.
  await client.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, payload, attempt, "maxRetries", "lastErrorMessage",
                                    "executedBy", "createdAt", "startedAt", "completedAt", queue, "groupKey",
                                    "uniqueKey")
     SELECT gen_random_uuid(), 'task' || (i % 20), s.state, '{"to": "someone@example.com"}', 1, 0,
            CASE WHEN s.state = 'failed' THEN
              CASE WHEN i % 100000 = 1 THEN 'quota exceeded for tenant 42'
                   WHEN i % 1000 = 1 THEN 'the printer is on fire'
                   WHEN i % 250 = 51 THEN 'timeout of 5000ms exceeded'
                   ELSE 'connect ECONNREFUSED 10.0.0.' || (i / 50 % 256) || ':5432' END
            END, 'bench',
            t.at - t.took - interval '1 second', t.at - t.took,
            CASE WHEN s.state <> 'active' THEN t.at END,
            CASE WHEN i % 20 < 5 THEN 'emails' ELSE 'default' END,
            CASE WHEN i % 3 <> 0 THEN 'tenant' || (i % 101) END,
            CASE WHEN i % 100 = 7 THEN 'order-' || i END
     FROM generate_series(1, $1) AS i,
          -- Durations from 20 ms to 2 s, on a log scale: a task's minute spreads over some twenty
          -- of the per-minute rows' buckets, as a real task's does.
          LATERAL (SELECT now() - make_interval(secs => i * 86400.0 / $1) AS at,
                          make_interval(secs => power(10, (i % 21) / 10.0 - 1.7)) AS took) AS t,
          LATERAL (SELECT CASE WHEN i % 20000 = 0 THEN 'active' WHEN i % 50 = 1 THEN 'failed'
                               WHEN i % 97 = 2 THEN 'cancelled' WHEN i % 331 = 3 THEN 'interrupted'
                               ELSE 'completed' END AS state) AS s`,
    [HISTORY_ROWS],
  );
  // One queued job in a hundred waits for its retry: queued again, its failed attempt in history.
  await client.query(
    `INSERT INTO jobs.jobs (id, task, retries, "maxRetries", "waitUntil", queue, "groupKey", "queuedAgain")
     SELECT gen_random_uuid(), 'task' || (i % 20), CASE WHEN i % 100 = 0 THEN 1 ELSE 0 END, 3,
            now() + make_interval(secs => i),
            CASE WHEN i % 20 < 5 THEN 'emails' ELSE 'default' END,
            CASE WHEN i % 3 <> 0 THEN 'tenant' || (i % 101) END, i % 100 = 0
     FROM generate_series(1, $1) AS i`,
    [QUEUED_JOBS],
  );
  await client.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, payload, attempt, "maxRetries", "lastErrorMessage",
                                    "executedBy", "createdAt", "startedAt", "completedAt", queue, "groupKey")
     SELECT id, task, 'failed', '{"to": "someone@example.com"}', 1, 3,
            'connect ECONNREFUSED 10.0.0.' || (seq % 256) || ':5432', 'bench',
            now() - interval '1 minute', now() - interval '1 minute', now() - interval '59 seconds',
            queue, "groupKey"
     FROM jobs.jobs WHERE "queuedAgain"`,
  );
  // The upkeep's round: with errorSearchIndex, it builds the trigram index of the errors.
  await upkeep();
  // What autovacuum does to tables this size: statistics, and the visibility map that lets the
  // counts read the index alone.
  await client.query(`VACUUM ANALYZE jobs."jobHistory"`);
  await client.query(`VACUUM ANALYZE jobs.jobs`);
  console.log(
    `Filled ${HISTORY_ROWS} history rows and ${QUEUED_JOBS} queued jobs (${QUEUED_JOBS / 100} waiting for a retry) in ${Math.round(performance.now() - started)} ms.`,
  );
}

/**
 * The per-minute rows of the filled day, as the instances' writer would have left them: each
 * minute written from its history rows, with a made-up sample of the two queues' depth, but the
 * last two minutes, which the writer (5 to 15 s after a minute's end) has not reached yet: the
 * day's durations read those from history, as they would. Then the writer runs, every 10 s, as on
 * an instance that runs jobs, and takes each minute that closes during the run.
 */
async function fillMinutes(client: pg.Client, recorder: MinuteStatsRecorder): Promise<void> {
  const started = performance.now();
  const { rows } = await client.query<{ minute: Date }>(
    `SELECT generate_series(date_trunc('minute', now() - interval '1 day'),
                            date_trunc('minute', now()) - interval '2 minutes', interval '1 minute') AS minute`,
  );
  for (const [i, { minute }] of rows.entries()) {
    const wave = Math.round(5000 * Math.sin(i / 60));
    await recorder.writeMinute(minute, [
      { name: 'default', pending: 75_000 + wave, blocked: 0, due: 7_500 + wave, active: 40 },
      { name: 'emails', pending: 25_000 - wave, blocked: 0, due: 2_500 - wave, active: 10 },
    ]);
  }
  recorder.start();
  console.log(
    `Filled ${rows.length} per-minute rows in ${Math.round(performance.now() - started)} ms.`,
  );
}

/**
 * A search's values, $1 to $10 of every list and count, as the service binds them
 * (`searchValues`): task, queue, group key, created after and before, the error as an ILIKE
 * pattern, the unique key, the first and last ids of an id prefix (whole 8-digit groups only
 * here), and a flow.
 */
function searchValues(
  search: { groupKey?: string; error?: string; uniqueKey?: string; idPrefix?: string } = {},
) {
  const { groupKey = null, error, uniqueKey = null, idPrefix } = search;
  const idRange =
    idPrefix === undefined
      ? [null, null]
      : [`${idPrefix}-0000-0000-0000-000000000000`, `${idPrefix}-ffff-ffff-ffff-ffffffffffff`];
  return [
    null,
    null,
    groupKey,
    null,
    null,
    error === undefined ? null : `%${error}%`,
    uniqueKey,
    ...idRange,
    null,
  ];
}

/** Limits as the service binds them: one row more than the page, one more than the count's cap. */
const PAGE = 51;
const COUNT = 10_001;

async function explain(
  client: pg.Client,
  { idPrefix, cursor }: { idPrefix: string; cursor: { at: string; id: string } },
): Promise<void> {
  const sql = adminSql(toSchemaName('jobs'));
  const minutes = minuteStatsSql(toSchemaName('jobs'));
  const statements: [string, string, unknown[]][] = [
    ['stats', sql.stats, [60]],
    ['throughput', sql.throughput, [60]],
    ['durations over a day (per-minute rows)', minutes.durations, [1440]],
    ['queue depth over a day', minutes.depth, ['default', 1440]],
    ['listEnded completed', sql.listEnded, [...searchValues(), 'completed', 21, 0, null, null]],
    ['listAll', sql.listAll, [...searchValues(), PAGE, 0, null, null]],
    [
      `listEnded failed, error ${COMMON_ERROR}`,
      sql.listEnded,
      [...searchValues({ error: COMMON_ERROR }), 'failed', PAGE, 0, null, null],
    ],
    [
      `listEnded failed, error ${RARE_ERROR}`,
      sql.listEnded,
      [...searchValues({ error: RARE_ERROR }), 'failed', PAGE, 0, null, null],
    ],
    [
      `listEnded failed, error ${NO_ERROR}`,
      sql.listEnded,
      [...searchValues({ error: NO_ERROR }), 'failed', PAGE, 0, null, null],
    ],
    [
      `listAll, error ${COMMON_ERROR}`,
      sql.listAll,
      [...searchValues({ error: COMMON_ERROR }), PAGE, 0, null, null],
    ],
    [`listAll, id ${idPrefix}`, sql.listAll, [...searchValues({ idPrefix }), PAGE, 0, null, null]],
    [
      'listAll, uniqueKey',
      sql.listAll,
      [...searchValues({ uniqueKey: 'order-500007' }), PAGE, 0, null, null],
    ],
    [
      `listEnded failed, groupKey ${GROUP_KEY}`,
      sql.listEnded,
      [...searchValues({ groupKey: GROUP_KEY }), 'failed', PAGE, 0, null, null],
    ],
    [
      'listEnded failed, second page',
      sql.listEnded,
      [...searchValues(), 'failed', PAGE, 0, cursor.at, cursor.id],
    ],
    [
      `countEnded failed, error ${COMMON_ERROR}`,
      sql.countEnded,
      [...searchValues({ error: COMMON_ERROR }), 'failed', COUNT],
    ],
    [
      `countEnded failed, error ${RARE_ERROR}`,
      sql.countEnded,
      [...searchValues({ error: RARE_ERROR }), 'failed', COUNT],
    ],
    ['countEnded completed', sql.countEnded, [...searchValues(), 'completed', COUNT]],
    ['countPending', sql.countPending, [...searchValues(), 'pending', COUNT]],
    ['countAll', sql.countAll, [...searchValues(), COUNT]],
  ];
  for (const [name, text, values] of statements) {
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, values);
    console.log(`\n${name}:\n${rows.map((row) => row['QUERY PLAN']).join('\n')}`);
  }
}

async function time(url: string, init?: RequestInit): Promise<number> {
  const started = performance.now();
  const res = await fetch(url, init);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${init?.method ?? 'GET'} ${url} answered ${res.status}`);
  return performance.now() - started;
}

const server = await resolveDatabaseServer(
  join(tmpdir(), 'nestjs-pg-jobs-bench', `pg-${process.pid}`),
);
const db = await createDatabase(server.url, 'jobs_bench_dashboard');
const client = new pg.Client({ connectionString: db.url });
client.on('error', () => undefined);
await client.connect();
try {
  @Module({
    imports: [
      // Runs no jobs (nothing is claimed, retried or pruned under the measurement).
      JobsModule.forRoot({
        connection: db.url,
        runJobs: false,
        historyExpiration: 0,
        errorSearchIndex,
      }),
      JobsAdminModule.forRoot({ path: 'jobs-admin', guard: { canActivate: () => true } }),
    ],
  })
  class DashboardBenchModule {}
  const app = await NestFactory.create(DashboardBenchModule, { logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  try {
    await fill(client, () => app.get(RetentionService).pruneExpiredHistory({ lease: false }));
    await fillMinutes(client, app.get(MinuteStatsRecorder));
    const base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}/jobs-admin`;
    const pick = async (text: string) => (await client.query<{ id: string }>(text)).rows;
    const [done] = await pick(`SELECT id FROM jobs."jobHistory" WHERE state = 'completed' LIMIT 1`);
    // The changing routes each get jobs of their own: a retried or cancelled job cannot be again
    // (nor can a failed job whose retry is pending).
    const failed = await pick(
      `SELECT id FROM jobs."jobHistory" h WHERE state = 'failed'
         AND NOT EXISTS (SELECT 1 FROM jobs.jobs q WHERE q.id = h.id)
       ORDER BY "completedAt" DESC LIMIT ${CALLS + WARM_UP}`,
    );
    const queued = await pick(`SELECT id FROM jobs.jobs LIMIT ${CALLS + WARM_UP}`);
    const action = { method: 'POST', headers: { 'x-jobs-admin': '1' } };
    // An id prefix of 8 digits (one job of a million, a range of the primary key): a completed
    // job's, so that the search is not answered by the queue's first rows.
    const idPrefix = done.id.slice(0, 8);
    // The second page of the failed jobs starts at the first page's `next`.
    const firstPage = (await (await fetch(`${base}/api/jobs?state=failed&limit=50`)).json()) as {
      next: string | null;
    };
    if (firstPage.next === null) throw new Error('The first page of failed jobs has no next page.');
    const next = encodeURIComponent(firstPage.next);
    // How many failed jobs each search matches, to read the times by.
    const searches: Record<string, string>[] = [
      { error: COMMON_ERROR },
      { error: RARE_ERROR },
      { error: NO_ERROR },
      { groupKey: GROUP_KEY },
    ];
    for (const search of searches) {
      const query = new URLSearchParams({ state: 'failed', ...search });
      const res = await fetch(`${base}/api/jobs/count?${query}`);
      console.log(
        `Failed jobs matching ${JSON.stringify(search)}: ${JSON.stringify(await res.json())}`,
      );
    }
    if (process.env.BENCH_EXPLAIN) {
      const cursor = JSON.parse(Buffer.from(firstPage.next, 'base64url').toString());
      await explain(client, { idPrefix, cursor });
    }

    // Every route of the API: the seven the page polls every 2 s first, then the others.
    const routes: [string, (i: number) => Promise<number>][] = [
      ['GET stats', () => time(`${base}/api/stats`)],
      ['GET jobs?state=failed&limit=50', () => time(`${base}/api/jobs?state=failed&limit=50`)],
      ['GET jobs?state=pending&limit=50', () => time(`${base}/api/jobs?state=pending&limit=50`)],
      ['GET jobs?state=active&limit=50', () => time(`${base}/api/jobs?state=active&limit=50`)],
      [
        'GET jobs?state=completed&limit=20',
        () => time(`${base}/api/jobs?state=completed&limit=20`),
      ],
      ['GET schedules', () => time(`${base}/api/schedules`)],
      ['GET throughput?minutes=60', () => time(`${base}/api/throughput?minutes=60`)],
      ['GET durations?minutes=60', () => time(`${base}/api/durations?minutes=60`)],
      // From the per-minute rows, and history for the minutes not written yet.
      ['GET durations?minutes=1440', () => time(`${base}/api/durations?minutes=1440`)],
      ['GET queues/:name/depth?minutes=60', () => time(`${base}/api/queues/default/depth`)],
      [
        'GET queues/:name/depth?minutes=1440',
        () => time(`${base}/api/queues/default/depth?minutes=1440`),
      ],
      ['GET instances', () => time(`${base}/api/instances`)],
      ['GET jobs (every state)', () => time(`${base}/api/jobs`)],
      ['GET jobs?state=interrupted', () => time(`${base}/api/jobs?state=interrupted`)],
      ['GET jobs?state=cancelled', () => time(`${base}/api/jobs?state=cancelled`)],
      ['GET jobs?state=failed&task=task1', () => time(`${base}/api/jobs?state=failed&task=task1`)],
      // No failed job of task7 exists: the page walks every failed entry of the index to find none.
      ['GET jobs?state=failed&task=task7', () => time(`${base}/api/jobs?state=failed&task=task7`)],
      [
        'GET jobs?state=completed&offset=5000',
        () => time(`${base}/api/jobs?state=completed&offset=5000`),
      ],
      // The search. A text few jobs have is a look-up of the error search index (errorSearchIndex);
      // a common one reads its matches through it, or walks the state newest first to the page,
      // as the planner estimates.
      [
        `GET jobs?state=failed&error=${COMMON_ERROR}`,
        () => time(`${base}/api/jobs?state=failed&error=${COMMON_ERROR}`),
      ],
      [
        `GET jobs?state=failed&error=${RARE_ERROR}`,
        () => time(`${base}/api/jobs?state=failed&error=${encodeURIComponent(RARE_ERROR)}`),
      ],
      [
        `GET jobs?state=failed&error=${NO_ERROR}`,
        () => time(`${base}/api/jobs?state=failed&error=${encodeURIComponent(NO_ERROR)}`),
      ],
      [`GET jobs?error=${COMMON_ERROR}`, () => time(`${base}/api/jobs?error=${COMMON_ERROR}`)],
      [`GET jobs?id=<8 digits>`, () => time(`${base}/api/jobs?id=${idPrefix}`)],
      // One job in a hundred of history has a unique key (as if enqueued with one).
      ['GET jobs?uniqueKey=<a key>', () => time(`${base}/api/jobs?uniqueKey=order-500007`)],
      [
        `GET jobs?state=failed&groupKey=${GROUP_KEY}`,
        () => time(`${base}/api/jobs?state=failed&groupKey=${GROUP_KEY}`),
      ],
      [
        'GET jobs?state=failed&cursor=<next>',
        () => time(`${base}/api/jobs?state=failed&limit=50&cursor=${next}`),
      ],
      [
        `GET jobs/count?state=failed&error=${COMMON_ERROR}`,
        () => time(`${base}/api/jobs/count?state=failed&error=${COMMON_ERROR}`),
      ],
      [
        `GET jobs/count?state=failed&error=${RARE_ERROR}`,
        () => time(`${base}/api/jobs/count?state=failed&error=${encodeURIComponent(RARE_ERROR)}`),
      ],
      ['GET jobs/count?state=completed', () => time(`${base}/api/jobs/count?state=completed`)],
      ['GET jobs/count?state=pending', () => time(`${base}/api/jobs/count?state=pending`)],
      ['GET jobs/count (every state)', () => time(`${base}/api/jobs/count`)],
      ['GET jobs/:id', () => time(`${base}/api/jobs/${done.id}`)],
      ['POST jobs/:id/retry', (i) => time(`${base}/api/jobs/${failed[i].id}/retry`, action)],
      ['POST jobs/:id/cancel', (i) => time(`${base}/api/jobs/${queued[i].id}/cancel`, action)],
    ];
    const results = [];
    for (const [route, call] of routes) {
      for (let i = 0; i < WARM_UP; i++) await call(CALLS + i);
      const samples: number[] = [];
      for (let i = 0; i < CALLS; i++) samples.push(await call(i));
      samples.sort((a, b) => a - b);
      const p95 = percentile(samples, 95);
      results.push({
        route,
        'p50 ms': Number(percentile(samples, 50).toFixed(1)),
        'p95 ms': Number(p95.toFixed(1)),
        [`p95 < ${TARGET_P95_MS} ms`]: p95 < TARGET_P95_MS ? 'yes' : 'NO',
      });
    }
    console.log(
      `Dashboard API on ${HISTORY_ROWS} history rows, ${CALLS} calls per route, one at a time:`,
    );
    console.table(results);
  } finally {
    await app.close();
  }
} finally {
  await client.end();
  await db.drop();
  await server.stop();
}
