import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { JobQueueService, JobsModule } from 'nestjs-pg-jobs';
import { queueSql } from '../../libs/jobs/src/queue/queue.sql.js';
import { validateJob } from '../../libs/jobs/src/queue/validate-job.js';
import { createDatabase, resolveDatabaseServer } from '../../tools/dev-database.js';
const server = await resolveDatabaseServer('/tmp/expdb');
const db = await createDatabase(server.url, 'jobs_pair');
@Module({ imports: [JobsModule.forRoot({ connection: db.url, runJobs: false, allowUnknownTasks: true })] }) class M {}
const app = await NestFactory.createApplicationContext(M, { logger: ['error'] });
const q = app.get(JobQueueService);
const pool = new pg.Pool({ connectionString: db.url, max: 10 });
await pool.query(`CREATE TABLE q (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, task text NOT NULL, payload jsonb NOT NULL, run_at timestamptz NOT NULL DEFAULT now()); CREATE INDEX q_run_at ON q (run_at, id);`);
const lib: number[] = [], base: number[] = [], val: number[] = [], direct: number[] = [], noconf: number[] = [];
const sql = queueSql({ quoted: 'jobs' } as never).insertJobs.text;
const sqlNoConf = sql.replace(/ON CONFLICT .* DO NOTHING/, '');
const defaults = { taskMaxRetries: () => undefined, isKnownTask: () => true, knownTasks: () => [], allowUnknownTasks: true, maxRetries: 5 };
for (let i = 0; i < 200; i++) {
  let t = performance.now();
  await q.addJobs(Array.from({ length: 500 }, () => ({ task: 'noop' })));
  lib.push(performance.now() - t);
  t = performance.now();
  const jobs = Array.from({ length: 500 }, () => validateJob({ task: 'noop' }, defaults));
  val.push(performance.now() - t);
  const values = [jobs.map((j) => j.id), ['noop'], jobs.map((j) => j.payload), [0], jobs.map((j) => j.waitUntil), [5], [false], jobs.map((j) => j.uniqueKey), [false], 'me', true, 'ch', 'n'];
  t = performance.now();
  await pool.query({ name: 'd', text: sql, values });
  direct.push(performance.now() - t);
  const jobs2 = Array.from({ length: 500 }, () => validateJob({ task: 'noop' }, defaults));
  const values2 = [jobs2.map((j) => j.id), ['noop'], jobs2.map((j) => j.payload), [0], jobs2.map((j) => j.waitUntil), [5], [false], jobs2.map((j) => j.uniqueKey), [false], 'me', true, 'ch', 'n'];
  t = performance.now();
  await pool.query({ name: 'nc', text: sqlNoConf, values: values2 });
  noconf.push(performance.now() - t);
  t = performance.now();
  await pool.query(`WITH i AS (INSERT INTO q (task, payload) SELECT 'noop', p FROM unnest($1::jsonb[]) p RETURNING 1) SELECT pg_notify('q', '') FROM (SELECT 1 FROM i LIMIT 1) x`, [Array.from({ length: 500 }, () => '{}')]);
  base.push(performance.now() - t);
  if (i % 40 === 39) { await pool.query('TRUNCATE q'); await pool.query('TRUNCATE jobs.jobs'); }
}
const med = (a: number[]) => [...a.slice(20)].sort((x, y) => x - y)[Math.floor((a.length - 20) / 2)];
console.log(process.argv[2] ?? '', 'per 500: lib', med(lib).toFixed(2), 'validate', med(val).toFixed(2), 'direct', med(direct).toFixed(2), 'noconflict', med(noconf).toFixed(2), 'base', med(base).toFixed(2), 'ratio', (med(base) / med(lib)).toFixed(2));
await app.close(); await pool.end(); await db.drop(); process.exit(0);
