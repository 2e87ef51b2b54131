import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { JobQueueService, JobsModule } from 'nestjs-pg-jobs';
import { createDatabase, resolveDatabaseServer } from '../../tools/dev-database.js';
import { runnerSql } from '../../libs/jobs/src/runner/runner.sql.js';

const server = await resolveDatabaseServer('/tmp/expdb');
const C = 50;
const base = runnerSql({ quoted: 'jobs' } as never);
const claimSplit = base.claim.text.replace(/, started AS \([\s\S]*?"updatedAt" = now\(\)\n      \)/, `, restarted AS (
        UPDATE jobs."jobHistory" h SET state = 'active', attempt = c.retries + 1, "maxRetries" = c."maxRetries",
          "executedBy" = $2, "startedAt" = now(), "completedAt" = NULL, "updatedAt" = now()
        FROM claimed c WHERE h.id = c.id
      ), started AS (
        INSERT INTO jobs."jobHistory" (id, task, state, payload, priority, attempt, "maxRetries",
                                             "wasScheduled", awaited, "executedBy", "createdAt", "startedAt")
        SELECT id, task, 'active', payload, priority, retries + 1, "maxRetries", "isScheduled", awaited,
               $2, "createdAt", now()
        FROM claimed c WHERE NOT EXISTS (SELECT 1 FROM jobs."jobHistory" h WHERE h.id = c.id)
      )`);
if (claimSplit === base.claim.text) throw new Error('no replace');
const completePk = base.complete.text.replace(`WHERE h.id = c.id AND h.attempt = c.attempt AND h.state = 'active'`, `WHERE h.id = ANY($1::uuid[]) AND h.id = c.id AND h.attempt = c.attempt AND h.state = 'active'`);
if (completePk === base.complete.text) throw new Error('no replace 2');
const claimCtid = base.claim.text.replace('WHERE id = ANY(ARRAY(\n          SELECT id FROM', 'WHERE ctid = ANY(ARRAY(\n          SELECT ctid FROM');
if (claimCtid === base.claim.text) throw new Error('no replace 3');
const variants: Record<string, [string, string]> = {
  current: [base.claim.text, base.complete.text],
  ctid: [claimCtid, base.complete.text],
};
for (const rep of [1, 2]) for (const [vname, [claimT, completeT]] of Object.entries(variants)) {
  const db = await createDatabase(server.url, 'jobs_exp');
  @Module({ imports: [JobsModule.forRoot({ connection: db.url, runJobs: false, allowUnknownTasks: true })] })
  class M {}
  const app = await NestFactory.createApplicationContext(M, { logger: ['error'] });
  const q = app.get(JobQueueService);
  for (let i = 0; i < 20; i++) await q.addJobs(Array.from({ length: 500 }, () => ({ task: 'noop' })));
  await app.close();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  let tClaim = 0, tDone = 0, n = 0;
  const start = performance.now();
  for (;;) {
    let t = performance.now();
    const { rows } = await client.query({ name: 'c', text: claimT, values: [C, 'x', ['noop']] });
    tClaim += performance.now() - t;
    if (rows.length === 0) break;
    t = performance.now();
    await client.query({ name: 'd', text: completeT, values: [rows.map((r) => r.id), 'ch', rows.map((r) => r.attempt)] });
    tDone += performance.now() - t;
    n += rows.length;
  }
  const ms = performance.now() - start;
  const { rows: [chk] } = await client.query(`SELECT count(*) FILTER (WHERE state = 'completed')::int AS done FROM jobs."jobHistory"`);
  console.log(vname, `jobs/s ${(n / ms * 1000).toFixed(0)} claim ${(tClaim / (n / C)).toFixed(2)}ms complete ${(tDone / (n / C)).toFixed(2)}ms per batch; completed ${chk.done}`);
  await client.end();
  await db.drop();
}
process.exit(0);
