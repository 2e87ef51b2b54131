import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { JobQueueService, JobsModule } from 'nestjs-pg-jobs';
import { createDatabase, resolveDatabaseServer } from '../../tools/dev-database.js';
import { runnerSql } from '../../libs/jobs/src/runner/runner.sql.js';

const server = await resolveDatabaseServer('/tmp/expdb');
const mode = process.argv[2] ?? 'unnamed';
const C = Number(process.argv[3] ?? 50);
for (let rep = 0; rep < 1; rep++) {
  const db = await createDatabase(server.url, 'jobs_exp');
  @Module({ imports: [JobsModule.forRoot({ connection: db.url, runJobs: false, allowUnknownTasks: true })] })
  class M {}
  const app = await NestFactory.createApplicationContext(M, { logger: ['error'] });
  const q = app.get(JobQueueService);
  for (let i = 0; i < 20; i++) await q.addJobs(Array.from({ length: 500 }, () => ({ task: 'noop' })));
  await app.close();
  const sql = runnerSql({ quoted: 'jobs' } as never);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  let k = 0;
  const run = async (name: string, stmt: { text: string }, values: unknown[]) => {
    if (++k === 101) { const r = await client.query({ text: 'EXPLAIN (ANALYZE, BUFFERS, WAL) ' + stmt.text, values }); console.log(r.rows.map((x) => x['QUERY PLAN']).join('\n')); }
    if (k === 102) { const r = await client.query({ text: 'EXPLAIN (ANALYZE, BUFFERS, WAL) ' + stmt.text, values }); console.log(r.rows.map((x) => x['QUERY PLAN']).join('\n')); }
    const text = stmt.text; return (
    client.query(mode === 'named' ? { name, text, values } : { text, values })); };
  let tClaim = 0, tDone = 0, n = 0;
  const start = performance.now();
  for (;;) {
    let t = performance.now();
    const { rows } = await run('claim', sql.claim, [C, 'x', ['noop']]);
    tClaim += performance.now() - t;
    if (rows.length === 0) break;
    t = performance.now();
    await run('complete', sql.complete, [rows.map((r) => r.id), 'ch', rows.map((r) => r.attempt)]);
    tDone += performance.now() - t;
    n += rows.length;
  }
  const ms = performance.now() - start;
  console.log(mode, C, `jobs/s ${(n / ms * 1000).toFixed(0)} claim ${(tClaim / (n / C)).toFixed(2)}ms complete ${(tDone / (n / C)).toFixed(2)}ms per batch`);
  await client.end();
  await db.drop();
}
process.exit(0);
