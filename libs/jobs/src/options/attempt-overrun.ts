import type { ResolvedJobsOptions } from './resolved-options.js';

/** An attempt that can stay `active` until `staleJobTimeout`, and what its lifetime adds up to. */
export interface AttemptOverrun {
  /** The longest the attempt stays active, in seconds. */
  readonly longest: number;
  /** The options added to its timeout, for a message: `workerTimeoutGrace (5s)`. */
  readonly extras: string;
}

/**
 * Whether an attempt with `timeout` can stay `active` in history until `staleJobTimeout`, when the
 * reaper presumes it abandoned and runs the job again while it still runs. A worker attempt waits
 * up to `workerStartTimeout` for a thread before its timeout starts; any attempt may take
 * `workerTimeoutGrace` past its timeout to end (a thread's grace, an in-process ending's write).
 */
export function attemptOverrun(
  options: ResolvedJobsOptions,
  timeout: number,
  worker: boolean,
): AttemptOverrun | undefined {
  const start = worker ? options.workerStartTimeout : 0;
  const longest = start + timeout + options.workerTimeoutGrace;
  if (longest < options.staleJobTimeout) return undefined;
  const extras =
    (worker ? `workerStartTimeout (${start}s) + ` : '') +
    `workerTimeoutGrace (${options.workerTimeoutGrace}s)`;
  return { longest, extras };
}

/** Why an overrun is refused, for the end of its message. */
export const OVERRUN_HAZARD =
  'or a healthy job that runs to its timeout is presumed abandoned and runs twice';
