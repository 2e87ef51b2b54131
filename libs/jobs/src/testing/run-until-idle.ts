import { setTimeout as sleep } from 'node:timers/promises';
import type { INestApplicationContext } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { findInApp } from '../common/find-in-app.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { JobsNotIdleError } from '../errors/jobs.errors.js';
import { JobRunner } from '../runner/job-runner.js';
import { testingSql } from './testing.sql.js';

/**
 * Options of `runUntilIdle()`.
 *
 * @publicApi
 */
export interface RunUntilIdleOptions {
  /** Seconds to wait before failing with `JobsNotIdleError`. Default 5 (Jest's own test timeout). */
  timeout?: number;
}

const DEFAULT_TIMEOUT = 5;
const POLL_MS = 20;

/**
 * Resolves once no job is due and none is running, as the database says: on every instance that
 * uses it, not only `app`. Jobs that jobs enqueue, and retries already due, are waited for too; a
 * retry waiting out its backoff, a delayed job and a cron slot to come are not due, so they do not
 * count. While jobs are due it wakes `app`'s runner, so that they start now rather than on its next
 * poll.
 *
 * ```ts
 * await request(app.getHttpServer()).post('/signup').send({ email });
 * await runUntilIdle(app);
 * expect(mailer.sent).toEqual([email]);
 * ```
 *
 * @param app an initialised app (or `TestingModule`) that imports `JobsModule`
 * @throws JobsNotIdleError with the jobs still due or running, after `timeout` seconds
 * @publicApi
 */
export async function runUntilIdle(
  app: INestApplicationContext,
  options: RunUntilIdleOptions = {},
): Promise<void> {
  const timeout = options.timeout ?? DEFAULT_TIMEOUT;
  const moduleRef = app.get(ModuleRef);
  const db = findInApp<JobsDatabase>(moduleRef, JobsDatabase, 'runUntilIdle');
  const runner = findInApp<JobRunner>(moduleRef, JobRunner, 'runUntilIdle');
  const { busy } = testingSql(db.schema);
  const deadline = Date.now() + timeout * 1000;
  for (;;) {
    const rows = await db.query<{ task: string; state: string; count: number }>(busy);
    if (rows.length === 0) return;
    if (Date.now() >= deadline) throw new JobsNotIdleError(timeout, rows);
    if (rows.some((row) => row.state === 'pending')) runner.wake('asked');
    await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
  }
}
