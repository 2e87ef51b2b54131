import { Inject, Injectable, Logger } from '@nestjs/common';
import { JobsDatabase } from '../database/jobs-database.js';
import {
  JobCancelledError,
  JobFailedError,
  JobPromiseTimeoutError,
  JobsShutdownError,
} from '../errors/jobs.errors.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { queueSql } from './queue.sql.js';

/** How a job ended, as far as a waiting caller cares. */
export interface JobEnding {
  readonly id: string;
  readonly state: string;
  readonly error?: string | null;
}

interface Waiter {
  resolve(): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * The `addJob({ promise: true })` callers of this instance, by job id.
 *
 * Every waiter leaves the map exactly once: when the job's end is heard of (from any instance,
 * over NOTIFY or a catch-up query), when `promiseTimeout` passes, or at shutdown. Settling twice is
 * harmless, so the same ending may arrive by several routes.
 */
@Injectable()
export class CompletionWaiters {
  private readonly logger = new Logger('JobsCompletion');
  private readonly waiters = new Map<string, Waiter>();
  private readonly timeoutSeconds: number;
  private readonly endedJobsSql: string;

  constructor(
    @Inject(JOBS_OPTIONS) options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
  ) {
    this.timeoutSeconds = options.promiseTimeout;
    this.endedJobsSql = queueSql(db.schema).endedJobs;
  }

  /** Registers a waiter before the job exists, so that no ending can be missed. */
  wait(id: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        reject(new JobPromiseTimeoutError(id, this.timeoutSeconds));
      }, this.timeoutSeconds * 1000);
      this.waiters.set(id, { resolve, reject, timer });
    });
  }

  /** The enqueue failed: the job does not exist, and its waiter goes without a word. */
  forget(id: string): void {
    const waiter = this.waiters.get(id);
    if (!waiter) return;
    clearTimeout(waiter.timer);
    this.waiters.delete(id);
  }

  settle(ending: JobEnding): void {
    const waiter = this.waiters.get(ending.id);
    if (!waiter) return;
    clearTimeout(waiter.timer);
    this.waiters.delete(ending.id);
    if (ending.state === 'completed') waiter.resolve();
    else if (ending.state === 'cancelled') waiter.reject(new JobCancelledError(ending.id));
    else waiter.reject(new JobFailedError(ending.id, ending.state, ending.error ?? null));
  }

  /**
   * Asks the database how the awaited jobs ended. Notifications sent while this instance was not
   * listening are lost, so this runs after every (re)connection and on the polling tick.
   */
  async catchUp(): Promise<void> {
    if (this.waiters.size === 0) return;
    const ended = await this.db.query<JobEnding>(this.endedJobsSql, [[...this.waiters.keys()]]);
    for (const ending of ended) this.settle(ending);
  }

  get size(): number {
    return this.waiters.size;
  }

  rejectAll(): void {
    if (this.waiters.size > 0) {
      this.logger.warn(
        `Rejecting ${this.waiters.size} job promise(s): the module is shutting down.`,
      );
    }
    for (const [id, waiter] of this.waiters) {
      clearTimeout(waiter.timer);
      this.waiters.delete(id);
      waiter.reject(new JobsShutdownError());
    }
  }
}
