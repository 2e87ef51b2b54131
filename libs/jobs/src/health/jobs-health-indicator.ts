import { Inject, Injectable } from '@nestjs/common';
import type { InjectionToken, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { toError } from '../common/errors.js';
import { findInApp } from '../common/find-in-app.js';
import { optionChecks } from '../common/option-checks.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { JobsError } from '../errors/jobs.errors.js';
import { NotificationListener } from '../notify/notification-listener.js';
import type { ListenStatus } from '../notify/notification-listener.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { WorkerPool } from '../worker-pool/worker-pool.js';
import { healthSql } from './health.sql.js';
import { loadTerminusPeer } from './terminus-peer.js';
import { DEFAULT_HEALTH_MAX_LAG, DEFAULT_HEALTH_TIMEOUT } from './jobs-health-options.interface.js';
import type { JobsHealthCheckOptions } from './jobs-health-options.interface.js';

/** What the result says of `LISTEN`; `polling` is behind a transaction pooler, by design. */
const LISTEN: Record<ListenStatus, { readonly shown: string; readonly healthy: boolean }> = {
  listening: { shown: 'listening', healthy: true },
  unavailable: { shown: 'polling', healthy: true },
  reconnecting: { shown: 'reconnecting', healthy: false },
  stopped: { shown: 'stopped', healthy: false },
};

const { seconds } = optionChecks(
  (option, value, expectation) =>
    new JobsError(
      `JobsHealthIndicator option "${option}" ${expectation}; got ${JSON.stringify(value)}.`,
    ),
);

/** The parts of `JobsModule` a check reads. */
interface Checked {
  readonly db: JobsDatabase;
  readonly listener: NotificationListener;
  readonly workerPool: WorkerPool;
  readonly options: ResolvedJobsOptions;
  readonly lag: string;
}

/**
 * A `@nestjs/terminus` health indicator of this instance's job queue. Provide it in a module that
 * imports `TerminusModule` (in the same app as `JobsModule`), and add it to a health check:
 *
 * ```ts
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.jobs.isHealthy('jobs', { maxLag: 60 })]); }
 * ```
 *
 * Up when the database answers within `timeout`, `LISTEN` is connected (or unavailable by design,
 * behind a transaction pooler: `listen: 'polling'`), the worker pool serves (with a
 * `workerModule`, on an instance that runs jobs), and the queue's lag (how long ago its most
 * overdue due job fell due) is at most `maxLag`. The result says each of them either way.
 *
 * @publicApi
 */
@Injectable()
export class JobsHealthIndicator implements OnModuleInit {
  private checked?: Checked;
  private indicators?: HealthIndicatorService;

  constructor(@Inject(ModuleRef) private readonly moduleRef: ModuleRef) {}

  /**
   * Finds `JobsModule` in the app, or fails the boot saying to import it, and terminus's
   * `HealthIndicatorService` (from the app's `TerminusModule`; the peer is loaded at boot, so its
   * class is looked up rather than injected by a decorator).
   */
  async onModuleInit(): Promise<void> {
    const { HealthIndicatorService } = await loadTerminusPeer();
    this.indicators = this.moduleRef.get(HealthIndicatorService, { strict: false });
    const find = <T>(token: InjectionToken) =>
      findInApp<T>(this.moduleRef, token, 'JobsHealthIndicator');
    const db = find<JobsDatabase>(JobsDatabase);
    this.checked = {
      db,
      listener: find<NotificationListener>(NotificationListener),
      workerPool: find<WorkerPool>(WorkerPool),
      options: find<ResolvedJobsOptions>(JOBS_OPTIONS),
      lag: healthSql(db.schema).lag,
    };
  }

  /** Checks the queue of this instance; the result is under `key`. */
  async isHealthy(
    key = 'jobs',
    options: JobsHealthCheckOptions = {},
  ): Promise<HealthIndicatorResult> {
    const maxLag = seconds('maxLag', options.maxLag, DEFAULT_HEALTH_MAX_LAG);
    const timeout = seconds('timeout', options.timeout, DEFAULT_HEALTH_TIMEOUT);
    const { db, listener, workerPool, options: jobs, lag: lagSql } = this.checked!;
    const problems: string[] = [];

    const lag = await withTimeout(db.query<{ lag: number }>(lagSql), timeout).then(
      ([row]) => Math.round(row.lag * 1000) / 1000,
      (err: unknown) => {
        problems.push(`the database did not answer: ${toError(err).message}`);
        return undefined;
      },
    );
    if (lag !== undefined && lag > maxLag) {
      problems.push(`the most overdue job fell due ${lag}s ago (maxLag ${maxLag}s)`);
    }
    const listen = LISTEN[listener.status];
    if (!listen.healthy) problems.push(`LISTEN is ${listen.shown}`);
    const poolUsed = workerPool.enabled && jobs.runJobs;
    if (poolUsed && !workerPool.ready) problems.push('the worker pool is not ready');

    const details = {
      database: lag === undefined ? 'down' : 'up',
      listen: listen.shown,
      workerPool: poolUsed ? (workerPool.ready ? 'up' : 'down') : 'none',
      lag: lag ?? null,
      maxLag,
    };
    const session = this.indicators!.check(key);
    return problems.length === 0
      ? session.up(details)
      : session.down({ ...details, message: problems.join('; ') });
  }
}

/** `promise`, or a rejection once `seconds` have passed: a hung database must not hang the check. */
function withTimeout<T>(promise: Promise<T>, seconds: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${seconds}s`)), seconds * 1000);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
