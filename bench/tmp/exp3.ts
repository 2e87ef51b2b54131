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
const V2 = `INSERT INTO jobs.jobs (id, task, payload, priority, "waitUntil", "maxRetries", "isScheduled", awaited, "createdBy")
  SELECT gen_random_uuid(), 'noop', p, 0, now(), 5, false, false, $2 FROM unnest($1::jsonb[]) p RETURNING id`;
const V3 = `INSERT INTO jobs.jobs (id, task, payload, priority, "waitUntil", "maxRetries", "isScheduled", awaited, "createdBy")
  SELECT i, 'noop', p, 0, now(), 5, false, false, $3 FROM unnest($1::uuid[], $2::jsonb[]) t(i, p) RETURNING id`;
for (const variant of ['current', 'noconflict', 'ids+payload', 'current', 'noconflict', 'ids+payload']) {
  const db = await createDatabase(server.url, 'jobs_exp');
  @Module({ imports: [JobsModule.forRoot({ connection: db.url, runJobs: false, allowUnknownTasks: true })] })
  class M {}
  const app = await NestFactory.createApplicationContext(M, { logger: ['error'] });
  await app.close();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const sql = queueSql({ quoted: 'jobs' } as never).insertJobs;
  const t0 = performance.now();
  for (let b = 0; b < 20; b++) {
    const jobs = Array.from({ length: 500 }, () => validateJob({ task: 'noop' }, defaults));
    if (variant === 'current') {
      const values = [jobs.map((j) => j.id), jobs.map((j) => j.task), jobs.map((j) => j.payload), jobs.map((j) => j.priority), jobs.map((j) => j.waitUntil), jobs.map((j) => j.maxRetries), jobs.map((j) => j.isScheduled), jobs.map((j) => j.uniqueKey), jobs.map((j) => j.awaited), 'me', true, 'ch', 'n'];
      await client.query({ name: 'ins', text: sql.text, values });
    } else if (variant === 'noconflict') {
      const values = [jobs.map((j) => j.id), jobs.map((j) => j.task), jobs.map((j) => j.payload), jobs.map((j) => j.priority), jobs.map((j) => j.waitUntil), jobs.map((j) => j.maxRetries), jobs.map((j) => j.isScheduled), jobs.map((j) => j.uniqueKey), jobs.map((j) => j.awaited), 'me', true, 'ch', 'n'];
      await client.query({ name: 'nc', text: sql.text.replace(/ON CONFLICT .* DO NOTHING/, ''), values });
    } else if (variant === 'noids') await client.query({ name: 'v2', text: V2, values: [jobs.map((j) => j.payload), 'me'] });
    else await client.query({ name: 'v3', text: V3, values: [jobs.map((j) => j.id), jobs.map((j) => j.payload), 'me'] });
  }
  console.log(variant, ((performance.now() - t0) / 20).toFixed(2), 'ms per 500 incl validation');
  await client.end();
  await db.drop();
}
process.exit(0);
