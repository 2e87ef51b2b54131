import type { Logger } from '@nestjs/common';
import { toError } from '../common/errors.js';
import type { JobsDatabase } from '../database/jobs-database.js';
import { JobsShutdownError } from '../errors/jobs.errors.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { retryWhileUnreachable } from './retry-while-unreachable.js';
import type { RunnerSql } from './runner.sql.js';
import type { RunningAttempts } from './running-attempts.js';

/** How long shutdown keeps trying to give unfinished attempts back to an unreachable database. */
const RELEASE_RETRY_MS = 5_000;

/**
 * The end of a runner that no longer claims: lets the running attempts finish for up to
 * `shutdownTimeout`, then aborts the rest and gives them back to the queue with their attempt
 * unconsumed.
 */
export class ShutdownDrain {
  constructor(
    private readonly options: ResolvedJobsOptions,
    private readonly db: JobsDatabase,
    private readonly sql: RunnerSql,
    private readonly running: RunningAttempts,
    private readonly logger: Logger,
  ) {}

  async drain(): Promise<void> {
    const { running } = this;
    if (running.size > 0) {
      this.logger.log(
        `Waiting up to ${this.options.shutdownTimeout}s for ${running.size} running job(s).`,
      );
      await running.whenEmpty(this.options.shutdownTimeout * 1000);
    }
    // Attempts whose outcome is known are writing their own ending: theirs is the result to keep.
    const unfinished = [...running.values()].filter((attempt) => !attempt.ended);
    if (unfinished.length === 0) return;
    for (const attempt of unfinished) {
      attempt.released = true;
      attempt.controller.abort(new JobsShutdownError());
    }
    // Bounded: if the database stays away, the attempts stay active and peers reap them once this
    // instance's heartbeat is older than instanceTimeout.
    const releaseDeadline = Date.now() + RELEASE_RETRY_MS;
    try {
      const { value: requeued } = await retryWhileUnreachable(
        `the release of ${unfinished.length} unfinished job(s)`,
        () =>
          this.db.query(
            this.sql.release,
            this.sql.release.values({
              attempts: unfinished,
              reason: `Instance ${this.options.instanceId} shut down before the attempt finished; the job was requeued.`,
            }),
          ),
        () => Date.now() > releaseDeadline,
        this.logger,
      );
      this.logger.warn(`Requeued ${requeued.length} job(s) still running at shutdown.`);
    } catch (err) {
      this.logger.warn(
        `Could not requeue ${unfinished.length} job(s) still running at shutdown (${toError(err).message}); ` +
          'they stay active until a peer reaps them, instanceTimeout after this instance is last heard of.',
      );
    }
  }
}
