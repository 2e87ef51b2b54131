import type { QueueRateLimit } from '../options/queue-options.interface.js';

/**
 * A queue as `JobQueueService.getQueues()` reports it: its state and counts, which are the
 * cluster's, and its limits, which are this instance's `queues` option (every instance that runs
 * the queue's tasks should have the same).
 *
 * @publicApi
 */
export interface QueueInfo {
  name: string;
  /** Paused: nothing of it starts, on any instance; enqueueing still works. */
  paused: boolean;
  /** Queued, due or not; not blocked. */
  pending: number;
  /** Queued in a flow, waiting for its dependencies to end (`blocked`). */
  blocked: number;
  /** Queued and due now. */
  due: number;
  /** Running now, across the cluster. */
  active: number;
  /** Limits configured for it on this instance; absent: none. */
  concurrency?: number;
  globalConcurrency?: number;
  rateLimit?: QueueRateLimit;
  groupConcurrency?: number;
}
