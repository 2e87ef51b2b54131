/**
 * `npm run bench:dashboard`: how fast every route of the dashboard's API answers on a big history.
 * A fresh database gets 1,000,000 history rows (BENCH_HISTORY_ROWS) spread over the last 24 hours
 * (mostly completed, some failed, cancelled and interrupted, a few running, twenty tasks) and a
 * queue of 5,000 jobs; then an app with `JobsAdminModule` (running no jobs, so nothing changes
 * underneath) answers each route BENCH_CALLS times (default 50), one call at a time, over HTTP.
 * Prints p50 and p95 per route and whether p95 is under 100 ms. `BENCH_EXPLAIN=1` also prints the
 * executed plans of the statements the page polls.
 */
import 'reflect-metadata';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { JobsAdminModule, JobsModule } from 'nestjs-pg-jobs';
import { createDatabase, resolveDatabaseServer } from '../tools/dev-database.js';
import { adminSql, toSchemaName } from './internals.js';
import { percentile } from './stats.js';

const HISTORY_ROWS = Number(process.env.BENCH_HISTORY_ROWS ?? 1_000_000);
const QUEUED_JOBS = 5_000;
const CALLS = Number(process.env.BENCH_CALLS ?? 50);
const WARM_UP = 5;
const TARGET_P95_MS = 100;

async function fill(client: pg.Client): Promise<void> {
  const started = performance.now();
  await client.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, payload, attempt, "maxRetries", "lastErrorMessage",
                                    "executedBy", "createdAt", "startedAt", "completedAt")
     SELECT gen_random_uuid(), 'task' || (i % 20), s.state, '{"to": "someone@example.com"}', 1, 0,
            CASE WHEN s.state = 'failed' THEN 'the printer is on fire' END, 'bench',
            t.at - interval '2 seconds', t.at - interval '1 second',
            CASE WHEN s.state <> 'active' THEN t.at END
     FROM generate_series(1, $1) AS i,
          LATERAL (SELECT now() - make_interval(secs => i * 86400.0 / $1) AS at) AS t,
          LATERAL (SELECT CASE WHEN i % 20000 = 0 THEN 'active' WHEN i % 50 = 1 THEN 'failed'
                               WHEN i % 97 = 2 THEN 'cancelled' WHEN i % 331 = 3 THEN 'interrupted'
                               ELSE 'completed' END AS state) AS s`,
    [HISTORY_ROWS],
  );
  await client.query(
    `INSERT INTO jobs.jobs (id, task, "maxRetries", "waitUntil")
     SELECT gen_random_uuid(), 'task' || (i % 20), 0, now() + make_interval(secs => i)
     FROM generate_series(1, $1) AS i`,
    [QUEUED_JOBS],
  );
  // What autovacuum does to tables this size: statistics, and the visibility map that lets the
  // counts read the index alone.
  await client.query(`VACUUM ANALYZE jobs."jobHistory"`);
  await client.query(`VACUUM ANALYZE jobs.jobs`);
  console.log(
    `Filled ${HISTORY_ROWS} history rows and ${QUEUED_JOBS} queued jobs in ${Math.round(performance.now() - started)} ms.`,
  );
}

async function explain(client: pg.Client): Promise<void> {
  const sql = adminSql(toSchemaName('jobs'));
  for (const [name, text, values] of [
    ['stats', sql.stats, [60]],
    ['throughput', sql.throughput, [60]],
    ['listEnded completed', sql.listEnded, ['completed', null, 21, 0]],
    ['listAll', sql.listAll, [null, 51, 0]],
  ] as const) {
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, [...values]);
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
      JobsModule.forRoot({ connection: db.url, runJobs: false, historyExpiration: 0 }),
      JobsAdminModule.forRoot({ path: 'jobs-admin', guard: { canActivate: () => true } }),
    ],
  })
  class DashboardBenchModule {}
  const app = await NestFactory.create(DashboardBenchModule, { logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  try {
    await fill(client);
    if (process.env.BENCH_EXPLAIN) await explain(client);
    const base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}/jobs-admin`;
    const pick = async (text: string) => (await client.query<{ id: string }>(text)).rows;
    const [done] = await pick(`SELECT id FROM jobs."jobHistory" WHERE state = 'completed' LIMIT 1`);
    // The changing routes each get jobs of their own: a retried or cancelled job cannot be again.
    const failed = await pick(
      `SELECT id FROM jobs."jobHistory" WHERE state = 'failed' ORDER BY "completedAt" DESC LIMIT ${CALLS + WARM_UP}`,
    );
    const queued = await pick(`SELECT id FROM jobs.jobs LIMIT ${CALLS + WARM_UP}`);
    const action = { method: 'POST', headers: { 'x-jobs-admin': '1' } };

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
