import type { JobsDatabase } from '../database/jobs-database.js';
import type { TaskRegistry } from '../discovery/task-registry.js';
import { hasClusterLimit } from '../options/resolve-queues.js';
import type { ResolvedQueueOptions } from '../options/resolve-queues.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import type { QueueStateService } from '../queue-state/queue-state.service.js';
import type { ClaimRow, LimitedClaimRow } from './claim.sql.js';
import type { RunnerSql } from './runner.sql.js';

/**
 * Tasks claimed by one statement: those of every queue without limits together (today's claim, as
 * if there were no queues), or the tasks of one queue with limits.
 */
interface ClaimSet {
  readonly tasks: readonly string[];
  /** The queue of each task, in the order of `tasks`. */
  readonly queues: readonly string[];
  /** The queue whose limits the set is claimed under; none for the set of unlimited queues. */
  readonly limits?: ResolvedQueueOptions;
}

/** What a round of claims says about the next one. */
export interface ClaimRound {
  /** A claim came back as full as this instance's free capacity allowed: claim again at once. */
  readonly full: boolean;
  /**
   * A queue was held back by its limits (its own `concurrency` here, or a cluster-wide limit) while
   * it may have jobs due: claim again when a job of this instance ends.
   */
  readonly heldBack: boolean;
  /** Milliseconds until a rate-limited queue held back by its window may start jobs again. */
  readonly rateWakeMs?: number;
}

/**
 * The claims of one round, one statement per set of tasks (see `ClaimSet`), sharing this
 * instance's free capacity. With no queue limits configured that is one statement, the claim the
 * runner makes without queues. Tasks of paused queues are left out of every set.
 *
 * Each round starts with the next set, so that no set keeps the free capacity to itself: a queue
 * whose claim always comes first would take every slot that frees while it has a backlog.
 */
export class QueueClaims {
  private sets?: readonly ClaimSet[];
  private nextFirst = 0;
  private readonly runningPerQueue = new Map<string, number>();

  constructor(
    private readonly options: ResolvedJobsOptions,
    private readonly db: JobsDatabase,
    private readonly sql: RunnerSql,
    private readonly registry: TaskRegistry,
    private readonly queueState: QueueStateService,
  ) {
    // Sets are rebuilt on the next round after a pause or a resume.
    queueState.onChange(() => (this.sets = undefined));
  }

  /** A task of `queue` started here: counted against the queue's own `concurrency`. */
  started(queue: string): void {
    this.runningPerQueue.set(queue, (this.runningPerQueue.get(queue) ?? 0) + 1);
  }

  /** A task of `queue` settled here. */
  settled(queue: string): void {
    this.runningPerQueue.set(queue, this.runningPerQueue.get(queue)! - 1);
  }

  /**
   * Claims up to `free` jobs across the sets, handing each statement's rows to `take` as they come:
   * if a later statement fails, what the earlier ones claimed is already in hand.
   */
  async claim(free: number, take: (rows: readonly ClaimRow[]) => void): Promise<ClaimRound> {
    const sets = (this.sets ??= this.buildSets());
    let taken = 0;
    let full = false;
    let heldBack = false;
    let rateWakeMs: number | undefined;
    const first = this.nextFirst++ % Math.max(1, sets.length);
    for (let i = 0; i < sets.length && taken < free; i++) {
      const set = sets[(first + i) % sets.length];
      const remaining = free - taken;
      const ownCap = set.limits?.concurrency;
      const asked =
        ownCap === undefined
          ? remaining
          : Math.min(remaining, ownCap - (this.runningPerQueue.get(set.limits!.name) ?? 0));
      if (asked <= 0) {
        heldBack = true;
        continue;
      }
      const claimed = await this.claimSet(set, asked);
      taken += claimed.jobs.length;
      take(claimed.jobs);
      if (claimed.jobs.length === asked || claimed.cut) {
        // Bound by this instance's capacity: more may be due. Bound by the queue's own
        // concurrency: more may be due once one of its jobs ends.
        if (asked === remaining || claimed.cut) full = true;
        else heldBack = true;
      } else if (claimed.heldBack) {
        heldBack = true;
        if (claimed.rateFreesIn !== null && claimed.rateFreesIn !== undefined) {
          rateWakeMs = Math.min(rateWakeMs ?? Infinity, Math.ceil(claimed.rateFreesIn * 1000));
        }
      }
    }
    // The sets the loop did not reach for want of capacity may have jobs due too.
    if (taken >= free) full = true;
    return { full, heldBack, rateWakeMs };
  }

  private async claimSet(
    set: ClaimSet,
    asked: number,
  ): Promise<{
    jobs: readonly ClaimRow[];
    cut?: boolean;
    heldBack?: boolean;
    rateFreesIn?: number | null;
  }> {
    const limits = set.limits;
    const executedBy = this.options.instanceId;
    if (!limits || !hasClusterLimit(limits)) {
      const { claim } = this.sql;
      const jobs = await this.db.query<ClaimRow>(
        claim,
        claim.values({ limit: asked, executedBy, tasks: set.tasks, queues: set.queues }),
      );
      return { jobs };
    }
    const { groupConcurrency } = limits;
    const claim =
      groupConcurrency === undefined ? this.sql.claimLimited : this.sql.claimLimitedByGroup;
    const rows = await this.db.query<LimitedClaimRow>(
      claim,
      claim.values({
        limit: asked,
        executedBy,
        tasks: set.tasks,
        queue: limits.name,
        globalConcurrency: limits.globalConcurrency,
        rateLimit: limits.rateLimit,
        groupConcurrency,
      }),
    );
    const [meta] = rows;
    return {
      jobs: rows.filter((row): row is LimitedClaimRow & ClaimRow => row.id !== null),
      // A cut walk that claimed nothing would only walk the same rows again.
      cut: meta.cut && meta.id !== null,
      heldBack: meta.heldBack,
      rateFreesIn: limits.rateLimit ? meta.rateFreesIn : null,
    };
  }

  /**
   * The sets of this instance's tasks by queue: the tasks of queues without limits in one set,
   * each queue with limits in a set of its own; paused queues in none.
   */
  private buildSets(): readonly ClaimSet[] {
    const byQueue = new Map<string, string[]>();
    for (const task of this.registry.names) {
      const queue = this.registry.queueOf(task)!;
      if (this.queueState.isPaused(queue)) continue;
      byQueue.set(queue, [...(byQueue.get(queue) ?? []), task]);
    }
    const unlimited = { tasks: [] as string[], queues: [] as string[] };
    const limited: ClaimSet[] = [];
    for (const [queue, tasks] of byQueue) {
      const limits = this.options.queues.get(queue);
      const queues = tasks.map(() => queue);
      if (limits && (limits.concurrency !== undefined || hasClusterLimit(limits))) {
        limited.push({ tasks, queues, limits });
      } else {
        unlimited.tasks.push(...tasks);
        unlimited.queues.push(...queues);
      }
    }
    return unlimited.tasks.length > 0 ? [unlimited, ...limited] : limited;
  }
}
