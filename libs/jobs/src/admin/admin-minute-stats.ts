import { percentilesFromBuckets } from '../minute-stats/duration-buckets.js';
import type { MinuteStatsSql } from '../minute-stats/minute-stats.sql.js';
import type { TaskDurations } from './jobs-admin.service.js';

/**
 * The longest window (minutes) `GET api/durations` reads from history, exact; a longer one is
 * read from the per-minute rows (`"jobTaskMinute"`), its percentiles from their buckets. An hour
 * of a million jobs a day is about 42,000 rows (75 ms at p95 in `npm run bench:dashboard`); a day,
 * every row of it (1.5 s).
 */
export const DURATIONS_FROM_HISTORY_MAX_MINUTES = 60;

/**
 * A queue's depth at the end of a minute, as `GET api/queues/:name/depth` lists it: sampled once a
 * minute, by one instance of the cluster, within seconds after the minute ended.
 *
 * @publicApi
 */
export interface QueueDepthPoint {
  /** The minute's start. */
  minute: Date;
  /** Queued, due or not; not blocked (`QueueInfo.pending`). */
  pending: number;
  /** Queued in a flow, waiting for its dependencies to end. */
  blocked: number;
  /** Queued and due. */
  due: number;
  /** Running, across the cluster. */
  active: number;
}

/**
 * What `GET api/durations` answers: each task's figures over the window, and how its percentiles
 * were taken.
 *
 * @publicApi
 */
export interface TaskDurationsReport {
  /** The window asked for, in minutes. */
  minutes: number;
  /**
   * `exact`: read from history, each completed job's duration (windows up to 60 minutes).
   * `buckets`: read from the per-minute rows (and from history for the minutes not written yet),
   * each percentile from a histogram of fixed buckets: within 9.5 % of the exact one (see
   * docs/operations.md, "Per-minute figures"). The counts are exact either way.
   */
  percentiles: 'exact' | 'buckets';
  tasks: TaskDurations[];
}

/** What `GET api/queues/:name/depth` answers. @publicApi */
export interface QueueDepthReport {
  queue: string;
  /** The window asked for, in minutes. */
  minutes: number;
  /** The minutes written in the window, oldest first; a minute no instance wrote is absent. */
  points: QueueDepthPoint[];
}

const QUANTILES = [0.5, 0.95, 0.99];

/**
 * A task's line of `GET durations` from its counts and its completed jobs' p50, p95 and p99 (in
 * that order; `null` when none completed), exact or from buckets alike.
 */
export function taskDurations(
  task: string,
  completed: number,
  failed: number,
  quantiles: readonly number[] | null,
): TaskDurations {
  return {
    task,
    completed,
    failed,
    failureRate: failed / (completed + failed),
    durationMs: quantiles && { p50: quantiles[0], p95: quantiles[1], p99: quantiles[2] },
  };
}

/** `JobsAdminService`'s reads of the per-minute figures (migration 18, `minute-stats/`). */
export class AdminMinuteStats {
  constructor(
    private readonly sql: MinuteStatsSql,
    private readonly read: <Row>(text: string, values: unknown[]) => Promise<Row[]>,
  ) {}

  /** Each task's figures over the last `minutes`, from the per-minute rows (see `durations`). */
  async durations(minutes: number): Promise<TaskDurationsReport> {
    const rows = await this.read<{
      task: string;
      bucket: number | null;
      completed: number;
      failed: number;
    }>(this.sql.durations, [minutes]);
    const byTask = new Map<
      string,
      { completed: number; failed: number; buckets: Map<number, number> }
    >();
    for (const { task, bucket, completed, failed } of rows) {
      let line = byTask.get(task);
      if (!line) byTask.set(task, (line = { completed: 0, failed: 0, buckets: new Map() }));
      line.completed += completed;
      line.failed += failed;
      if (bucket !== null) line.buckets.set(bucket, completed);
    }
    const tasks = [...byTask]
      .filter(([, { completed, failed }]) => completed + failed > 0)
      .map(([task, { completed, failed, buckets }]) =>
        taskDurations(task, completed, failed, percentilesFromBuckets(buckets, QUANTILES)),
      );
    return { minutes, percentiles: 'buckets', tasks };
  }

  /** Queue `queue`'s depth at the end of each minute written in the last `minutes`. */
  async depth(queue: string, minutes: number): Promise<QueueDepthReport> {
    return {
      queue,
      minutes,
      points: await this.read<QueueDepthPoint>(this.sql.depth, [queue, minutes]),
    };
  }
}
