/**
 * Options of `JobQueueService.waitForJob`.
 *
 * @publicApi
 */
export interface WaitForJobOptions {
  /**
   * Seconds to wait before rejecting with `JobPromiseTimeoutError` (the job itself goes on).
   * Default: the module's `promiseTimeout`.
   */
  timeout?: number;
}
