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
const db = await createDatabase(server.url, 'jobs_exp');
@Module({ imports: [JobsModule.forRoot({ connection: db.url, runJobs: false, allowUnknownTasks: true })] })
class M {}
const app = await NestFactory.createApplicationContext(M, { logger: ['error'] });
await app.close();
const client = new pg.Client({ connectionString: db.url });
await client.connect();
const sql = queueSql({ quoted: 'jobs' } as never).insertJobs.text;
const sqlJoined = sql.replace('unnest($1::uuid[],', "unnest(string_to_array($1, ',')::uuid[],"); if (sqlJoined === sql) throw new Error('x');
const mk = () => { const jobs = Array.from({ length: 500 }, () => validateJob({ task: 'noop' }, defaults));
  return [jobs.map((j) => j.id), ['noop'], jobs.map((j) => j.payload), [0], jobs.map((j) => j.waitUntil), [5], [false], jobs.map((j) => j.uniqueKey), [false], 'me', true, 'ch', 'n']; };
const noop = `SELECT cardinality($1::uuid[]) + cardinality($2::text[]) + cardinality($3::jsonb[])+ cardinality($4::int[])+ cardinality($5::timestamptz[])+ cardinality($6::int[])+ cardinality($7::bool[])+ cardinality($8::text[])+ cardinality($9::bool[]), $10::text, $11::bool, $12::text, $13::text`;
const t = { payJson: 0, rtJoined: 0, joined: 0, joinedText: 0, rt: 0, noop: 0, exec: 0, sel1: 0, idsonly: 0, payonly: 0, nulls: 0 };
for (let i = 0; i < 30; i++) {
  let v = mk(); let t0 = performance.now(); await client.query({ name: 'ins', text: sql, values: v }); if (i >= 10) t.rt += performance.now() - t0;
  v = mk(); t0 = performance.now(); await client.query({ name: 'noop', text: noop, values: v }); if (i >= 10) t.noop += performance.now() - t0;
  v = mk(); t0 = performance.now(); await client.query({ name: 'ids', text: 'SELECT cardinality($1::uuid[])', values: [v[0]] }); if (i >= 10) t.idsonly += performance.now() - t0;
  v = mk(); t0 = performance.now(); await client.query({ name: 'pay', text: 'SELECT cardinality($1::jsonb[])', values: [v[2]] }); if (i >= 10) t.payonly += performance.now() - t0;
  v = mk(); t0 = performance.now(); await client.query({ name: 'nul', text: 'SELECT cardinality($1::timestamptz[]) + cardinality($2::text[])', values: [v[4], v[7]] }); if (i >= 10) t.nulls += performance.now() - t0;
  v = mk(); t0 = performance.now(); await client.query({ name: 'joined', text: "SELECT cardinality(string_to_array($1, ',')::uuid[])", values: [(v[0] as string[]).join(',')] }); if (i >= 10) t.joined += performance.now() - t0;
  v = mk(); t0 = performance.now(); await client.query({ name: 'joinedt', text: "SELECT length($1)", values: [(v[0] as string[]).join(',')] }); if (i >= 10) t.joinedText += performance.now() - t0;
  v = mk(); t0 = performance.now(); await client.query({ name: 'pj', text: "SELECT cardinality(ARRAY(SELECT jsonb_array_elements($1::jsonb)))", values: ['[' + (v[2] as string[]).join(',') + ']'] }); if (i >= 10) t.payJson += performance.now() - t0;
  v = mk(); v[0] = (v[0] as string[]).join(','); t0 = performance.now(); await client.query({ name: 'insj', text: sqlJoined, values: v }); if (i >= 10) t.rtJoined += performance.now() - t0;
  t0 = performance.now(); await client.query({ name: 'sel1', text: 'SELECT 1', values: [] }); if (i >= 10) t.sel1 += performance.now() - t0;
  v = mk(); const r = await client.query({ text: 'EXPLAIN (ANALYZE) ' + sql, values: v }); if (i >= 10) t.exec += Number(/Execution Time: ([\d.]+)/.exec(r.rows.map((x) => x['QUERY PLAN']).join('\n'))![1]);
}
console.log(Object.fromEntries(Object.entries(t).map(([k, v]) => [k, (v / 20).toFixed(2)])));
await client.end(); await db.drop(); process.exit(0);
