import { Inject, Injectable, Logger } from '@nestjs/common';
import { NAME_PATTERN, NAME_RULE } from '../common/names.js';
import { Tick } from '../common/tick.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { TaskRegistry } from '../discovery/task-registry.js';
import { InvalidJobOptionsError } from '../errors/jobs.errors.js';
import { NotificationListener } from '../notify/notification-listener.js';
import { channelFor } from '../notify/notification-protocol.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import type { QueueInfo } from './queue-info.interface.js';
import { queuesSql } from './queue-state.sql.js';
import type { QueuesSql } from './queue-state.sql.js';

/** What `counts` returns (see `queuesSql`). */
interface Counts {
  queued: { task: string; queue: string; pending: number; blocked: number; due: number }[];
  running: { queue: string; active: number }[];
  stored: { name: string; paused: boolean }[];
}

/** Reads of the paused queues one refresh makes at most while changes keep arriving. */
const REFRESH_READS = 3;

/**
 * Which queues are paused, for this instance's claims, and the persisted state behind it.
 *
 * The state lives in the `queues` table; each instance keeps the set of paused queues in memory,
 * so that a claim of the queues that have no limits stays the statement it is without queues. A
 * change reaches every instance over NOTIFY (sent by the statement that makes it), and the set is
 * read again on every `pollingCheck` and after every LISTEN (re)connection: a lost notification
 * delays a pause or a resume by one poll at most. Until an instance has heard of a pause, it may
 * still start jobs of the queue: a pause is effective everywhere within a notification's delay
 * (milliseconds), else within `pollingCheck`.
 */
@Injectable()
export class QueueStateService {
  private readonly logger = new Logger('JobsQueues');
  private readonly sql: QueuesSql;
  private readonly channel: string;
  private readonly poll: Tick;
  private readonly listeners = new Set<() => void>();
  private paused: ReadonlySet<string> = new Set();
  /** Bumped by every change this instance makes or hears of: what a read in flight may predate. */
  private changes = 0;

  constructor(
    @Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
    @Inject(TaskRegistry) private readonly registry: TaskRegistry,
    @Inject(NotificationListener) listener: NotificationListener,
  ) {
    this.sql = queuesSql(db.schema);
    listener.on('queuePaused', ({ queue, paused }) => this.apply(queue, paused));
    listener.onConnected(() => void this.refresh().catch(() => undefined));
    this.channel = channelFor(db.schema);
    this.poll = new Tick(
      'Reading paused queues',
      options.pollingCheck * 1000,
      () => this.refresh(),
      this.logger,
    );
  }

  /**
   * Stores the configured queues that the database does not know yet, in their configured state,
   * reads which queues are paused, and keeps reading it.
   */
  async start(): Promise<void> {
    const configured = [...this.options.queues.values()];
    if (configured.length > 0) {
      await this.db.query(this.sql.declare, [
        configured.map((queue) => queue.name),
        configured.map((queue) => queue.paused),
      ]);
    }
    await this.poll.startNow();
  }

  stop(): Promise<void> {
    return this.poll.stop();
  }

  /** Called whenever the set of paused queues changes. */
  onChange(listener: () => void): void {
    this.listeners.add(listener);
  }

  isPaused(queue: string): boolean {
    return this.paused.has(queue);
  }

  /**
   * Reads the paused queues from the database: the backstop for a lost notification. A change made
   * or heard while the read was in flight may be newer than what it read (a pause made here just
   * after the read's snapshot, its answer arriving after the pause): the read is then made again,
   * not applied, and left to the next poll if changes keep coming.
   */
  async refresh(): Promise<void> {
    for (let read = 0; read < REFRESH_READS; read++) {
      const seen = this.changes;
      const rows = await this.db.query<{ name: string }>(this.sql.paused);
      if (this.changes === seen) return this.replace(new Set(rows.map((row) => row.name)));
    }
  }

  /** A `queuePaused` notification, or this instance's own change. */
  private apply(queue: string, paused: boolean): void {
    this.changes++;
    if (this.paused.has(queue) === paused) return;
    const next = new Set(this.paused);
    if (paused) next.add(queue);
    else next.delete(queue);
    this.replace(next);
  }

  async setPaused(queue: string, paused: boolean): Promise<void> {
    if (typeof queue !== 'string' || !NAME_PATTERN.test(queue)) {
      throw new InvalidJobOptionsError('queue', queue, `must be a queue name (${NAME_RULE})`);
    }
    await this.db.query(this.sql.setPaused, [queue, paused, this.channel]);
    // This instance acts at once, without waiting for its own notification.
    this.apply(queue, paused);
    this.logger.log(`Queue "${queue}" ${paused ? 'paused' : 'resumed'}.`);
  }

  /**
   * Every queue this instance configures or runs tasks of, stored in the database, or holding
   * jobs, with its state, its counts and the limits configured here.
   */
  async list(): Promise<QueueInfo[]> {
    const [counts] = await this.db.query<Counts>(this.sql.counts);
    const queues = new Map<string, QueueInfo>();
    const entry = (name: string) => {
      let queue = queues.get(name);
      if (!queue) {
        queue = {
          name,
          paused: false,
          pending: 0,
          blocked: 0,
          due: 0,
          active: 0,
          ...this.limitsOf(name),
        };
        queues.set(name, queue);
      }
      return queue;
    };
    for (const name of this.options.queues.keys()) entry(name);
    for (const task of this.registry.names) entry(this.registry.queueOf(task)!);
    for (const { name, paused } of counts.stored) entry(name).paused = paused;
    for (const { task, queue, pending, blocked, due } of counts.queued) {
      const counted = entry(this.registry.pendingQueueOf(task, queue));
      counted.pending += pending;
      counted.blocked += blocked;
      counted.due += due;
    }
    for (const { queue, active } of counts.running) entry(queue).active += active;
    return [...queues.values()].sort((x, y) => (x.name < y.name ? -1 : 1));
  }

  /** The limits this instance configures for `queue`, the absent ones left out. */
  private limitsOf(queue: string): Partial<QueueInfo> {
    const limits = this.options.queues.get(queue);
    if (!limits) return {};
    const { concurrency, globalConcurrency, rateLimit, groupConcurrency } = limits;
    return Object.fromEntries(
      Object.entries({
        concurrency,
        globalConcurrency,
        rateLimit: rateLimit && { ...rateLimit },
        groupConcurrency,
      }).filter(([, value]) => value !== undefined),
    );
  }

  private replace(next: ReadonlySet<string>): void {
    const changed =
      next.size !== this.paused.size || [...next].some((queue) => !this.paused.has(queue));
    this.paused = next;
    if (!changed) return;
    for (const listener of this.listeners) listener();
  }
}
