import { Inject, Injectable, Logger } from '@nestjs/common';
import { toError } from '../common/errors.js';
import { Tick } from '../common/tick.js';
import { JobsDatabase } from '../database/jobs-database.js';
import {
  JobCancelledError,
  JobFailedError,
  JobPromiseTimeoutError,
  JobsShutdownError,
} from '../errors/jobs.errors.js';
import { NotificationListener } from '../notify/notification-listener.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { queueSql } from './job-queue.sql.js';

/** How a job ended, as far as a waiting caller cares. */
export interface JobEnding {
  readonly id: string;
  readonly state: string;
  readonly error?: string | null;
  /**
   * A completed job's result as JSON text, `null` when its task returned nothing; `undefined` when
   * the ending does not say (a notification never carries a result): it is then read from history.
   */
  readonly result?: string | null;
}

/** One caller's wait for a job's end. */
export interface JobWait<Result = unknown> {
  /** Resolves with the job's result (`undefined` when its task returned nothing). */
  readonly promise: Promise<Result>;
  /** The caller no longer waits (its enqueue failed): the promise is left unsettled, unheard. */
  forget(): void;
}

interface Waiter {
  resolve(result: unknown): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * The callers of this instance waiting for jobs to end, by job id. One job may have several: two
 * awaited adds of one unique key, or a batch that repeats a key, wait for the same job.
 *
 * Every waiter leaves exactly once: when the job's end is heard of, when `promiseTimeout` passes,
 * or at shutdown. An end is heard of over NOTIFY or from the catch-up query, which runs after every
 * LISTEN (re)connection and on every `pollingCheck`: a NOTIFY may never come (LISTEN is down, or
 * unavailable behind a transaction pooler; the job was added without `promise` and an awaited add
 * was deduplicated onto it), and the poll is what makes every waiter settle anyway. Settling twice
 * is harmless, so the same end may arrive by several routes.
 *
 * A completion resolves its waiters with the job's result. A notification cannot carry one (it
 * must stay under 8000 bytes), so a completion heard that way is looked up with the catch-up query
 * for its job alone: a result is read from the database only when someone waits for it.
 */
@Injectable()
export class CompletionWaiters {
  private readonly logger = new Logger('JobsCompletion');
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** Jobs whose completion was heard without their result, to read in one query. */
  private readonly resultsToRead = new Set<string>();
  private readonly timeoutSeconds: number;
  private readonly endedJobsSql: string;
  private readonly poll: Tick;

  constructor(
    @Inject(JOBS_OPTIONS) options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
    @Inject(NotificationListener) listener: NotificationListener,
  ) {
    listener.on('jobCompleted', (ending) => this.settle(ending));
    listener.onConnected(() => void this.catchUp().catch(() => undefined));
    this.timeoutSeconds = options.promiseTimeout;
    this.endedJobsSql = queueSql(db.schema).endedJobs;
    this.poll = new Tick(
      'Asking how awaited jobs ended',
      options.pollingCheck * 1000,
      () => this.catchUp(),
      this.logger,
    );
  }

  /** @internal Starts the catch-up poll (a no-op round while nobody waits). */
  start(): void {
    this.poll.start();
  }

  /**
   * Registers a waiter; before the job exists (or before asking how it ended), so that no ending
   * can be missed. It gives up after `timeout` seconds (`promiseTimeout`, unless `waitForJob` says).
   */
  wait<Result = unknown>(
    id: string,
    timeout?: { seconds: number; setBy: string },
  ): JobWait<Result> {
    const { seconds, setBy } = timeout ?? { seconds: this.timeoutSeconds, setBy: 'promiseTimeout' };
    let waiter!: Waiter;
    const promise = new Promise<Result>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.remove(id, waiter);
        reject(new JobPromiseTimeoutError(id, seconds, setBy));
      }, seconds * 1000);
      waiter = { resolve: resolve as (result: unknown) => void, reject, timer };
    });
    let waiting = this.waiters.get(id);
    if (!waiting) this.waiters.set(id, (waiting = new Set()));
    waiting.add(waiter);
    return {
      promise,
      forget: () => {
        clearTimeout(waiter.timer);
        this.remove(id, waiter);
      },
    };
  }

  settle(ending: JobEnding): void {
    const waiting = this.waiters.get(ending.id);
    if (!waiting) return;
    if (ending.state === 'completed' && ending.result === undefined) {
      this.readResult(ending.id);
      return;
    }
    this.waiters.delete(ending.id);
    if (ending.state === 'completed') {
      const result = ending.result == null ? undefined : JSON.parse(ending.result);
      for (const waiter of waiting) {
        clearTimeout(waiter.timer);
        waiter.resolve(result);
      }
      return;
    }
    const error =
      ending.state === 'cancelled'
        ? new JobCancelledError(ending.id)
        : new JobFailedError(ending.id, ending.state, ending.error ?? null);
    for (const waiter of waiting) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
    }
  }

  /** Asks the database how the awaited jobs ended, for the ends no notification told of. */
  async catchUp(): Promise<void> {
    if (this.waiters.size === 0) return;
    await this.settleFromHistory([...this.waiters.keys()]);
  }

  /** Jobs waited for. */
  get size(): number {
    return this.waiters.size;
  }

  /** @internal Stops the poll and rejects every waiter: the module is shutting down. */
  async stop(): Promise<void> {
    await this.poll.stop();
    if (this.waiters.size > 0) {
      this.logger.warn(
        `Rejecting the promises of ${this.waiters.size} job(s): the module is shutting down.`,
      );
    }
    const waiting = [...this.waiters.values()];
    this.waiters.clear();
    for (const waiter of waiting.flatMap((set) => [...set])) {
      clearTimeout(waiter.timer);
      waiter.reject(new JobsShutdownError());
    }
  }

  /**
   * Reads the result of a job whose completion was heard without it, together with the others of
   * this turn of the event loop. If the read fails, the waiters stay: the next catch-up settles them.
   */
  private readResult(id: string): void {
    const scheduled = this.resultsToRead.size > 0;
    this.resultsToRead.add(id);
    if (scheduled) return;
    setImmediate(() => {
      const ids = [...this.resultsToRead];
      this.resultsToRead.clear();
      this.settleFromHistory(ids).catch((err: unknown) =>
        this.logger.warn(
          `Reading the results of ${ids.length} awaited job(s) failed (${toError(err).message}); ` +
            'the next poll settles them.',
        ),
      );
    });
  }

  /** Settles the waiters of the jobs among `ids` that have ended, with what history says. */
  private async settleFromHistory(ids: readonly string[]): Promise<void> {
    const ended = await this.db.query<JobEnding>(this.endedJobsSql, [ids]);
    // History is the last word: a completed row's NULL result means the task returned nothing.
    for (const ending of ended) this.settle({ ...ending, result: ending.result ?? null });
  }

  private remove(id: string, waiter: Waiter): void {
    const waiting = this.waiters.get(id);
    if (!waiting?.delete(waiter)) return;
    if (waiting.size === 0) this.waiters.delete(id);
  }
}
