import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { JobsModule } from 'nestjs-pg-jobs';
import { createDatabase, resolveDatabaseServer } from '../../tools/dev-database.js';
const server = await resolveDatabaseServer('/tmp/expdb');
const db = await createDatabase(server.url, 'jobs_exp');
@Module({ imports: [JobsModule.forRoot({ connection: db.url, runJobs: false, allowUnknownTasks: true })] })
class M {}
const app = await NestFactory.createApplicationContext(M, { logger: ['error'] });
await app.close();
const client = new pg.Client({ connectionString: db.url });
await client.connect();
await client.query(`CREATE TABLE q (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, task text NOT NULL, payload jsonb NOT NULL, run_at timestamptz NOT NULL DEFAULT now());
  CREATE INDEX q_run_at ON q (run_at, id);`);
const ex = async (label: string, sql: string) => { const times = []; for (let i = 0; i < 8; i++) { const r = await client.query('EXPLAIN (ANALYZE, WAL) ' + sql); times.push(Number(/Execution Time: ([\d.]+)/.exec(r.rows.map((x) => x['QUERY PLAN']).join('\n'))![1])); } console.log(label, times.map((t) => t.toFixed(2)).join(' ')); };
await ex('baseline q', `INSERT INTO q (task, payload) SELECT 'noop', p FROM unnest(array_fill('{}'::jsonb, ARRAY[500])) p`);
await ex('jobs (all idx)', `INSERT INTO jobs.jobs (id, task, payload, "maxRetries", "createdBy") SELECT gen_random_uuid(), 'noop', p, 5, 'me' FROM unnest(array_fill('{}'::jsonb, ARRAY[500])) p`);
await ex('jobs on conflict', `INSERT INTO jobs.jobs (id, task, payload, "maxRetries", "createdBy") SELECT gen_random_uuid(), 'noop', p, 5, 'me' FROM unnest(array_fill('{}'::jsonb, ARRAY[500])) p ON CONFLICT ("uniqueKey") WHERE "uniqueKey" IS NOT NULL DO NOTHING`);
await client.query('DROP INDEX jobs.jobs_claim_order');
await ex('jobs no claim idx', `INSERT INTO jobs.jobs (id, task, payload, "maxRetries", "createdBy") SELECT gen_random_uuid(), 'noop', p, 5, 'me' FROM unnest(array_fill('{}'::jsonb, ARRAY[500])) p`);
await client.query('ALTER TABLE jobs.jobs DROP CONSTRAINT jobs_pkey');
await ex('jobs no pk', `INSERT INTO jobs.jobs (id, task, payload, "maxRetries", "createdBy") SELECT gen_random_uuid(), 'noop', p, 5, 'me' FROM unnest(array_fill('{}'::jsonb, ARRAY[500])) p`);
await ex('jobs no pk no uuid', `INSERT INTO jobs.jobs (id, task, payload, "maxRetries", "createdBy") SELECT '00000000-0000-0000-0000-000000000000', 'noop', p, 5, 'me' FROM unnest(array_fill('{}'::jsonb, ARRAY[500])) p`);
await client.end(); await db.drop(); process.exit(0);
