import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { JobsModule } from 'nestjs-pg-jobs';
import { createDatabase, resolveDatabaseServer } from '../../tools/dev-database.js';
import { queueSql } from '../../libs/jobs/src/queue/queue.sql.js';
import { validateJob } from '../../libs/jobs/src/queue/validate-job.js';
const server = await resolveDatabaseServer('/tmp/expdb');
const defaults = { taskMaxRetries: () => undefined, isKnownTask: () => true, knownTasks: () => [], allowUnknownTasks: true, maxRetries: 5 };
const current = queueSql({ quoted: 'jobs' } as never).insertJobs.text;
const uniform = current.replace(`SELECT id, task, payload, priority, COALESCE("waitUntil", now()), "maxRetries", "isScheduled",
               "uniqueKey", awaited, $10`, `SELECT id, coalesce(task, $2[1]), payload, coalesce(priority, $4[1]), COALESCE("waitUntil", now()), coalesce("maxRetries", $6[1]), coalesce("isScheduled", $7[1]),
               "uniqueKey", coalesce(awaited, $9[1]), $10`);
if (uniform === current) throw new Error('x');
const col = <T>(jobs: any[], f: (j: any) => T): T[] => { const v = f(jobs[0]); return jobs.every((j) => f(j) === v) ? [v] : jobs.map(f); };
const baseline = `WITH i AS (INSERT INTO q (task, payload) SELECT 'noop', p FROM unnest($1::jsonb[]) p RETURNING 1)
       SELECT pg_notify('q', '') FROM (SELECT 1 FROM i LIMIT 1) x`;
for (const variant of ['current', 'uniform', 'baseline', 'current', 'uniform', 'baseline', 'current', 'uniform', 'baseline']) {
  const db = await createDatabase(server.url, 'jobs_exp');
  @Module({ imports: [JobsModule.forRoot({ connection: db.url, runJobs: false, allowUnknownTasks: true })] })
  class M {}
  const app = await NestFactory.createApplicationContext(M, { logger: ['error'] });
  await app.close();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  await client.query(`CREATE TABLE q (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, task text NOT NULL,
                  payload jsonb NOT NULL, run_at timestamptz NOT NULL DEFAULT now());
  CREATE INDEX q_run_at ON q (run_at, id);`);
  const t0 = performance.now();
  for (let b = 0; b < 20; b++) {
    const jobs = Array.from({ length: 500 }, () => validateJob({ task: 'noop' }, defaults));
    if (variant === 'baseline') { await client.query({ name: 'b', text: baseline, values: [jobs.map(() => '{}')] }); continue; }
    const c = variant === 'uniform' ? col : (js: any[], f: any) => js.map(f);
    const values = [jobs.map((j) => j.id), c(jobs, (j) => j.task), jobs.map((j) => j.payload), c(jobs, (j) => j.priority), jobs.map((j) => j.waitUntil), c(jobs, (j) => j.maxRetries), c(jobs, (j) => j.isScheduled), jobs.map((j) => j.uniqueKey), c(jobs, (j) => j.awaited), 'me', true, 'ch', 'n'];
    await client.query({ name: variant, text: variant === 'uniform' ? uniform : current, values });
  }
  console.log(variant, ((performance.now() - t0) / 20).toFixed(2), 'ms per 500 incl validation');
  await client.end();
  await db.drop();
}
process.exit(0);
