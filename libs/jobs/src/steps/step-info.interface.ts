/** One durable step of a job, as `getJob` reports it. @publicApi */
export interface JobStepInfo {
  /** Its name; `name#2` for the second call of a name in one run, and so on. */
  name: string;
  /** `running`: a step running for over a second, or a sleep or a wait not over yet. */
  state: 'running' | 'completed' | 'failed';
  startedAt: Date;
  endedAt: Date | null;
  /** A failed step's error. */
  error?: string;
}

/**
 * What a suspended job waits for: a time (`ctx.sleep`), an event until its timeout (`until`,
 * `null` without one: `ctx.waitForEvent`), or jobs to end (those that had not: `ctx.waitForJobs`).
 *
 * @publicApi
 */
export type JobWaitingFor =
  { until: Date } | { event: string; until: Date | null } | { jobs: string[] };

/** How a job that `ctx.waitForJobs` waited for ended. @publicApi */
export interface JobOutcome {
  state: 'completed' | 'failed' | 'interrupted' | 'cancelled' | 'skipped';
  /** What a completed job's task returned. */
  result?: unknown;
  /** Why a job that did not complete ended so. */
  error?: string;
}
