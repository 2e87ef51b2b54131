import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { toError } from '../common/errors.js';
import { Tick } from '../common/tick.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { InstanceIdInUseError } from '../errors/jobs.errors.js';
import { InstanceIdentityLock } from './instance-identity-lock.js';
import { instancesSql } from './instances.sql.js';
import type { InstanceRegistration } from './instances.sql.js';

interface HolderRow {
  readonly hostname: string | null;
  readonly pid: number | null;
  readonly silentFor: number;
  /** As text: compared for equality, to tell a new heartbeat. */
  readonly heartbeatAt: string;
}

/**
 * Keeps this instance's row in the instances table alive: registered at bootstrap (before it
 * claims anything), a heartbeat every `heartbeatInterval`, removed at clean shutdown (after the
 * runner drained, so no job of ours is left `active`).
 *
 * Peers presume the instance dead once its heartbeat is older than `instanceTimeout`, and requeue
 * its jobs. An instance that was only paused (SIGSTOP, a long GC, a frozen VM) finds out on its
 * next heartbeat and says so; its late writes are then fenced out by the runner, not undone here.
 */
@Injectable()
export class InstanceHeartbeat {
  private readonly logger = new Logger('JobsInstances');
  private readonly sql: ReturnType<typeof instancesSql>;
  private readonly tick: Tick;
  private readonly host = hostname();
  private registration?: InstanceRegistration;
  /**
   * Since when (monotonic ms) every heartbeat has succeeded; unset while they fail. A boot counts as
   * healthy all along: it has no earlier view of the database to distrust.
   */
  private healthySince: number | undefined = -Infinity;
  /** When (monotonic ms) a heartbeat last succeeded: one that hangs neither fails nor succeeds. */
  private lastBeatAt = performance.now();
  private stopping?: Promise<void>;
  private readonly identity: InstanceIdentityLock;

  constructor(
    @Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
  ) {
    this.sql = instancesSql(db.schema);
    this.identity = new InstanceIdentityLock(db, options.instanceId);
    // Jittered like every tick, which is safe here only because jitter never lengthens a wait:
    // the wait between beats stays within heartbeatInterval, so an instanceTimeout of two
    // intervals still survives one lost beat.
    this.tick = new Tick(
      'Heartbeat',
      options.heartbeatInterval * 1000,
      () => this.beat(),
      this.logger,
    );
  }

  /**
   * Whether this instance's own view of the database has been unbroken for `instanceTimeout`.
   *
   * After an outage every peer's heartbeat is old, live or not. A reaper that judged them at once
   * would requeue the jobs of instances that are merely waiting to write their results; waiting
   * one `instanceTimeout` of working heartbeats gives the live ones time to be heard again.
   */
  get canJudgePeers(): boolean {
    const now = performance.now();
    const timeoutMs = this.options.instanceTimeout * 1000;
    return (
      this.healthySince !== undefined &&
      now - this.healthySince >= timeoutMs &&
      now - this.lastBeatAt < timeoutMs
    );
  }

  /**
   * Registers this life of the instance and starts heartbeating. Throws `InstanceIdInUseError` if
   * a live instance has the id, and whatever the database says if it refuses.
   */
  async start(): Promise<void> {
    const claim = await this.identity.acquire();
    if (claim === 'noSession') {
      this.registration = await this.registerWithoutLock();
    } else {
      if (claim === 'heldElsewhere') await this.checkLockHolder();
      [this.registration] = await this.register(false);
    }
    this.lastBeatAt = performance.now();
    this.tick.start();
  }

  /** Stops heartbeating and deregisters. Idempotent; a database that is down only costs a warning. */
  stop(): Promise<void> {
    this.stopping ??= this.deregister().finally(() => this.identity.release());
    return this.stopping;
  }

  /** How many jobs this instance runs at once, as the console shows it: none without `runJobs`. */
  private concurrency(): number {
    return this.options.runJobs ? this.options.concurrency : 0;
  }

  private register(onlyIfNoLiveHolder: boolean): Promise<InstanceRegistration[]> {
    return this.db.query<InstanceRegistration>(this.sql.register, [
      this.options.instanceId,
      this.host,
      process.pid,
      this.options.instanceTimeout,
      onlyIfNoLiveHolder,
      this.concurrency(),
    ]);
  }

  /**
   * Behind a transaction-mode pooler no lock vouches for the id, and the heartbeat row decides: it
   * is taken only while no live instance heartbeats in it (one statement looks and takes). A live
   * twin is refused once it is seen heartbeating again; a crashed predecessor's id is free once its
   * heartbeat is `instanceTimeout` old (a clean shutdown removed the row: free at once).
   */
  private async registerWithoutLock(): Promise<InstanceRegistration> {
    const { instanceId, heartbeatInterval } = this.options;
    this.logger.warn(
      `Instance id ${instanceId} is not locked: the database is reached through a transaction-mode pooler, ` +
        'where a session lock cannot hold. The heartbeat vouches for it alone: after a crash, the id boots again ' +
        "once the dead instance's heartbeat is instanceTimeout old.",
    );
    let seen: string | undefined;
    for (;;) {
      const [registration] = await this.register(true);
      if (registration) return registration;
      const [holder] = await this.db.query<HolderRow>(this.sql.liveHolder, [instanceId]);
      // Gone stale between the two statements: the next insert takes it.
      if (!holder) continue;
      if (seen !== undefined && holder.heartbeatAt !== seen) {
        throw new InstanceIdInUseError(instanceId, holder);
      }
      seen = holder.heartbeatAt;
      const untilStale = Math.max(0, this.options.instanceTimeout - holder.silentFor);
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(heartbeatInterval, untilStale) * 1000),
      );
    }
  }

  /**
   * The id's lock is free when no live process has the id (a predecessor that crashed released it
   * with its connection). When it is held, a live twin registers right after taking it, so its row
   * is fresh within a heartbeat; a lock held with no fresh row after one is a pooler's leftover.
   */
  private async checkLockHolder(): Promise<void> {
    for (let look = 0; ; look++) {
      const [holder] = await this.db.query<HolderRow>(this.sql.liveHolder, [
        this.options.instanceId,
      ]);
      if (holder) throw new InstanceIdInUseError(this.options.instanceId, holder);
      if (look === 1) break;
      await new Promise((resolve) => setTimeout(resolve, this.options.heartbeatInterval * 1000));
    }
    this.logger.warn(
      `The lock on instance id ${this.options.instanceId} is held, but no instance with that id heartbeats: ` +
        "taking it as a transaction pooler keeping a dead session's lock, and booting.",
    );
  }

  private async beat(): Promise<void> {
    const registration = this.registration;
    if (!registration) return;
    let silentFor: number | null;
    try {
      [{ silentFor }] = await this.db.query<{ silentFor: number | null }>(this.sql.heartbeat, [
        this.options.instanceId,
        this.host,
        process.pid,
        registration.startedAt,
        this.options.instanceTimeout,
        this.concurrency(),
      ]);
    } catch (err) {
      if (this.healthySince !== undefined) {
        this.logger.warn(
          `Heartbeat failed (${toError(err).message}); retrying every ${this.options.heartbeatInterval}s.`,
        );
      }
      this.healthySince = undefined;
      return;
    }
    const now = performance.now();
    if (
      this.healthySince === undefined ||
      now - this.lastBeatAt >= this.options.instanceTimeout * 1000
    ) {
      if (this.healthySince === undefined) this.logger.log('Heartbeat reached the database again.');
      this.healthySince = now;
    }
    this.lastBeatAt = now;
    if (silentFor === null || silentFor > this.options.instanceTimeout) {
      this.logger.warn(
        `Instance ${this.options.instanceId} was presumed dead: ` +
          (silentFor === null
            ? 'a reaper removed its registration'
            : `no heartbeat for ${silentFor.toFixed(1)}s`) +
          ` (instanceTimeout ${this.options.instanceTimeout}s). Jobs it was running may have been requeued elsewhere; ` +
          'their results from this instance will be dropped.',
      );
    }
  }

  private async deregister(): Promise<void> {
    await this.tick.stop();
    const registration = this.registration;
    if (!registration) return;
    await this.db
      .query(this.sql.deregister, [this.options.instanceId, registration.startedAt])
      .catch((err: unknown) =>
        this.logger.warn(
          `Could not deregister instance ${this.options.instanceId} (${toError(err).message}); ` +
            'peers will forget it after instanceTimeout.',
        ),
      );
  }
}
