import type { JobDependencies } from '../discovery/job-task.interfaces.js';

/** The job an attempt runs: what a task needs, wherever it runs (in-process or in a pool thread). */
export interface AttemptJob {
  readonly id: string;
  readonly task: string;
  readonly payload: unknown;
  /** The attempt this claim started: the fencing token of every write that ends it. */
  readonly attempt: number;
  readonly maxRetries: number;
  /** The claim's token, which fences the attempt's writes: a durable step's checkpoint too. */
  readonly claim: string;
  /** A worker task's dependencies, read before its dispatch (a thread has no database). */
  readonly dependencies?: JobDependencies;
}
