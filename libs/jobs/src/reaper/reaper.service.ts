import { Inject, Injectable, Logger } from '@nestjs/common';
import { Tick } from '../common/tick.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { InstanceHeartbeat } from '../instances/instance-heartbeat.js';
import { channelFor, NEW_JOB_NOTIFICATION } from '../notify/notification-protocol.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { reaperSql } from './reaper.sql.js';
import type { ReapReason } from './reaper.sql.js';

interface ReapResult {
  stranded: number;
  requeued: number;
  reasons: Partial<Record<ReapReason, number>>;
  forgotten: string[];
}

/**
 * Requeues jobs that were claimed and never finished.
 *
 * A job leaves `jobs` when it is claimed and is marked `active` in history while it runs, so an
 * instance that dies mid-job leaves a row saying a job started that nothing will finish; nothing
 * else notices, since the job is no longer queued. The seed knew only the attempt's age, so a dead
 * instance's jobs waited `staleJobTimeout` (an hour). Here instances heartbeat, and the jobs of one
 * that has been silent for `instanceTimeout` are requeued; age remains the fallback for an instance
 * that heartbeats but is stuck. Either way the attempt that was running may still finish: its
 * writes are fenced by the attempt, so a late result is dropped, never recorded over a newer one.
 *
 * @publicApi
 */
@Injectable()
export class ReaperService {
  private readonly logger = new Logger('JobsReaper');
  private readonly sql: ReturnType<typeof reaperSql>;
  private readonly channel: string;
  private readonly tick: Tick;
  private judgedPeers = true;

  /** @internal Nest constructs it: its parameters are the module's internals. */
  constructor(
    @Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
    @Inject(InstanceHeartbeat) private readonly heartbeat: InstanceHeartbeat,
  ) {
    this.sql = reaperSql(db.schema);
    this.channel = channelFor(db.schema);
    // A dead instance's jobs wait `instanceTimeout` plus up to one interval; with the seed's
    // five-minute `scheduledCheck` alone the heartbeats would buy little.
    const intervalSeconds = Math.min(options.scheduledCheck, options.instanceTimeout / 2);
    this.tick = new Tick(
      'Reaping stale jobs',
      intervalSeconds * 1000,
      () => this.reapStaleJobs(),
      this.logger,
    );
  }

  /** Requeues (or, with no attempts left, ends) abandoned `active` jobs; returns how many it requeued. */
  async reapStaleJobs(): Promise<number> {
    const { instanceTimeout, staleJobTimeout, instanceId } = this.options;
    const judgePeers = this.heartbeat.canJudgePeers;
    if (judgePeers !== this.judgedPeers) {
      this.judgedPeers = judgePeers;
      if (!judgePeers) {
        this.logger.warn(
          `This instance lost the database; it will judge peers by their heartbeats again after ` +
            `${instanceTimeout}s of working heartbeats (until then only staleJobTimeout applies).`,
        );
      }
    }
    const { reap } = this.sql;
    const [result] = await this.db.query<ReapResult>(
      reap,
      reap.values({
        instanceTimeout,
        staleJobTimeout,
        requeuedBy: instanceId,
        channel: this.channel,
        notification: NEW_JOB_NOTIFICATION,
        judgePeers,
        messages: {
          stale: `No instance reported on this job within ${staleJobTimeout}s (staleJobTimeout); it was presumed abandoned.`,
          restarted:
            'Instance %s restarted while this attempt was active; the attempt was abandoned with its earlier life.',
          // %s: the instance, then its instanceTimeout.
          silent:
            'Instance %s stopped heartbeating for over %ss (its instanceTimeout) while running this attempt; it was presumed dead.',
        },
      }),
    );
    if (result.stranded > 0) {
      const reasons = Object.entries(result.reasons)
        .map(([reason, count]) => `${count} ${reason}`)
        .join(', ');
      this.logger.warn(
        `Found ${result.stranded} interrupted job(s) (${reasons}), ${result.requeued} of them requeued.`,
      );
    }
    if (result.forgotten.length > 0) {
      this.logger.warn(
        `Presumed dead (no heartbeat within their instanceTimeout): ${result.forgotten.join(', ')}.`,
      );
    }
    return result.requeued;
  }

  /** @internal Reaps once (before this instance claims anything), then on every interval. */
  start(): Promise<void> {
    return this.tick.startNow();
  }

  /** @internal */
  stop(): Promise<void> {
    return this.tick.stop();
  }
}
