/** Default `maxLag` of `JobsHealthIndicator.isHealthy()`, in seconds. @publicApi */
export const DEFAULT_HEALTH_MAX_LAG = 60;
/** Default `timeout` of `JobsHealthIndicator.isHealthy()`, in seconds. @publicApi */
export const DEFAULT_HEALTH_TIMEOUT = 1;

/**
 * Options of one `JobsHealthIndicator.isHealthy()` check. Durations are in seconds, as the
 * module's options are.
 *
 * @publicApi
 */
export interface JobsHealthCheckOptions {
  /**
   * The queue is unhealthy once its most overdue due job fell due longer ago than this: jobs are
   * not being claimed (no instance runs their task, or every instance is saturated). Default 60.
   * Keep it above `pollingCheck`, and above what a burst your instances work off may wait.
   */
  maxLag?: number;
  /** How long the database may take to answer before it counts as down. Default 1. */
  timeout?: number;
}
