/**
 * At most `limit` jobs of a queue start in any window of `periodSeconds`, across the cluster.
 *
 * @publicApi
 */
export interface QueueRateLimit {
  /** Starts allowed per window: an integer >= 1. */
  limit: number;
  /** The window's length in seconds (fractions allowed). */
  periodSeconds: number;
}

/**
 * Limits of one named queue: `JobsModule.forRoot({ queues: { emails: { ... } } })`. A task joins a
 * queue with `@JobTask({ name, queue: 'emails' })`; tasks without one are in the `default` queue.
 * A queue with none of these options costs nothing: its jobs are claimed as if there were no
 * queues at all. The cluster-wide limits (`globalConcurrency`, `rateLimit`, `groupConcurrency`)
 * hold across every instance that has them configured: give every instance that runs the queue's
 * tasks the same options.
 *
 * @publicApi
 */
export interface QueueOptions {
  /**
   * Jobs of this queue one instance runs at once. The module's `concurrency` stays the cap over all
   * queues. Default: no cap of its own.
   */
  concurrency?: number;
  /**
   * Jobs of this queue `active` across the whole cluster at once: never exceeded, however many
   * instances claim at the same moment. Default: no limit.
   */
  globalConcurrency?: number;
  /** At most `limit` jobs of the queue start in any window of `periodSeconds`, cluster-wide. */
  rateLimit?: QueueRateLimit;
  /**
   * Jobs of one group (`AddJobOptions.groupKey`, a tenant id for example) `active` at once across
   * the cluster. A group's backlog never holds back another group's jobs. Jobs without a
   * `groupKey` are not limited by it.
   */
  groupConcurrency?: number;
  /**
   * The queue's state when it first becomes known to the database (the first boot that has it):
   * `true` creates it paused. Once it exists, `pauseQueue` / `resumeQueue` decide, and a restart
   * does not change what they set. Default `false`.
   */
  paused?: boolean;
}
