import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { JobsModule } from 'nestjs-pg-jobs';
import { createDatabase, resolveDatabaseServer } from '../../tools/dev-database.js';
import { queueSql } from '../../libs/jobs/src/queue/queue.sql.js';
import { validateJob } from '../../libs/jobs/src/queue/validate-job.js';

const server = await resolveDatabaseServer('/tmp/expdb');
const variant = process.argv[2] ?? 'as-is';
for (let rep = 0; rep < 2; rep++) {
  const db = await createDatabase(server.url, 'jobs_exp');
  @Module({ imports: [JobsModule.forRoot({ connection: db.url, runJobs: false, allowUnknownTasks: true })] })
  class M {}
  const app = await NestFactory.createApplicationContext(M, { logger: ['error'] });
  await app.close();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  if (variant === 'noclaimidx') await client.query('DROP INDEX jobs.jobs_claim_order');
  if (variant === 'nouniq') await client.query('DROP INDEX jobs.jobs_unique_key');
  const sql = queueSql({ quoted: 'jobs' } as never).insertJobs;
  const defaults = { taskMaxRetries: () => undefined, isKnownTask: () => true, knownTasks: () => [], allowUnknownTasks: true, maxRetries: 5 };
  let tJs = 0, tSql = 0;
  for (let b = 0; b < 20; b++) {
    let t = performance.now();
    const jobs = Array.from({ length: 500 }, () => validateJob({ task: 'noop' }, defaults));
    const values = [jobs.map((j) => j.id), jobs.map((j) => j.task), jobs.map((j) => j.payload), jobs.map((j) => j.priority), jobs.map((j) => j.waitUntil), jobs.map((j) => j.maxRetries), jobs.map((j) => j.isScheduled), jobs.map((j) => j.uniqueKey), jobs.map((j) => j.awaited), 'me', true, 'ch', 'n'];
    tJs += performance.now() - t;
    t = performance.now();
    if (b === 18) {
      let t2 = performance.now();
      for (const v of values) (pg as any).types && (await import('pg/lib/utils.js')).default.prepareValue(v);
      console.log('prepare', (performance.now() - t2).toFixed(2));
      t2 = performance.now();
      await client.query({ name: 'noop', text: 'SELECT cardinality($1::uuid[]) + cardinality($2::text[]) + cardinality($3::jsonb[])+ cardinality($4::int[])+ cardinality($5::timestamptz[])+ cardinality($6::int[])+ cardinality($7::bool[])+ cardinality($8::text[])+ cardinality($9::bool[]), $10::text, $11::bool, $12::text, $13::text', values });
      console.log('noop roundtrip', (performance.now() - t2).toFixed(2));
      t2 = performance.now();
      await client.query({ name: 'noop', text: 'SELECT cardinality($1::uuid[]) + cardinality($2::text[]) + cardinality($3::jsonb[])+ cardinality($4::int[])+ cardinality($5::timestamptz[])+ cardinality($6::int[])+ cardinality($7::bool[])+ cardinality($8::text[])+ cardinality($9::bool[]), $10::text, $11::bool, $12::text, $13::text', values });
      console.log('noop roundtrip', (performance.now() - t2).toFixed(2));
      t2 = performance.now();
      await client.query('BEGIN'); await client.query({ name: 'ins', text: sql.text, values }); 
      console.log('insert no commit', (performance.now() - t2).toFixed(2));
      t2 = performance.now();
      await client.query('COMMIT');
      console.log('commit', (performance.now() - t2).toFixed(2));
    }
    if (b === 19) {
      const r = await client.query({ text: 'EXPLAIN (ANALYZE, BUFFERS) ' + sql.text, values });
      console.log(r.rows.map((x) => x['QUERY PLAN']).join('\n'));
    } else await client.query({ name: 'ins', text: sql.text, values });
    tSql += performance.now() - t;
  }
  console.log(variant, `js ${(tJs / 20).toFixed(2)}ms sql ${(tSql / 20).toFixed(2)}ms per 500`);
  await client.end();
  await db.drop();
}
process.exit(0);
