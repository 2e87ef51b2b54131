import { toError } from '../common/errors.js';
import { serialiseJson } from '../common/json-payload.js';
import type { JobBackoff } from '../discovery/job-task.interfaces.js';
import {
  InvalidResultError,
  JobSnooze,
  JobSuspension,
  ResultTooLargeError,
  UnrecoverableJobError,
} from '../errors/jobs.errors.js';
import { MAX_RETRY_DELAY_LIMIT } from '../options/defaults.js';
import type { AttemptJob } from './attempt-job.js';

/** What happens to a job whose attempt failed, as its task (or its error) decided. */
export interface RetryDecision {
  /** Fail the job now, whatever retries it has left. */
  readonly giveUp: boolean;
  /** Seconds before the next attempt, if retries remain; absent: the default backoff. */
  readonly delay?: number;
}

/**
 * How an attempt's task ended, wherever it ran: what the write that ends the attempt records.
 * A result is the JSON text of what the task returned, `null` when it returned nothing.
 */
export type AttemptEnding =
  | { readonly outcome: 'completed'; readonly result: string | null }
  | { readonly outcome: 'snoozed'; readonly seconds: number }
  | { readonly outcome: 'suspended'; readonly suspension: JobSuspension }
  | { readonly outcome: 'failed'; readonly error: Error; readonly retry: RetryDecision };

/** Most tasks return nothing: their ending is one shared object, and no JSON work. */
const WITHOUT_RESULT: AttemptEnding = Object.freeze({ outcome: 'completed', result: null });
const DEFAULT_BACKOFF: RetryDecision = Object.freeze({ giveUp: false });
const GIVE_UP: RetryDecision = Object.freeze({ giveUp: true });

/**
 * The ending of a task that returned `value`: completed with it as the job's result, or snoozed.
 * Throws `InvalidResultError` (naming the path) or `ResultTooLargeError` for a value that cannot be
 * the result: the attempt then fails with that error.
 */
export function endingOfReturn(value: unknown, maxResultBytes: number): AttemptEnding {
  if (value === undefined) return WITHOUT_RESULT;
  if (value instanceof JobSnooze) return { outcome: 'snoozed', seconds: value.seconds };
  const result = serialiseJson(value, (path, reason) => new InvalidResultError(path, reason));
  // UTF-8 takes at most three bytes per UTF-16 unit: most results need no counting at all.
  if (result.length * 3 > maxResultBytes) {
    const bytes = Buffer.byteLength(result);
    if (bytes > maxResultBytes) throw new ResultTooLargeError(bytes, maxResultBytes);
  }
  return { outcome: 'completed', result };
}

/**
 * The ending of a task that threw `thrown` (or of an attempt stopped from outside, with that
 * reason): snoozed if it threw what `ctx.snooze()` returns, else failed, with the retry its error
 * and its task's `backoff` decide. `warn` hears a `backoff` that threw or answered nonsense.
 */
export function endingOfThrow(
  thrown: unknown,
  job: AttemptJob,
  backoff: JobBackoff | undefined,
  warn: (message: string) => void,
): AttemptEnding {
  if (thrown instanceof JobSnooze) return { outcome: 'snoozed', seconds: thrown.seconds };
  if (thrown instanceof JobSuspension) return { outcome: 'suspended', suspension: thrown };
  const error = toError(thrown);
  return { outcome: 'failed', error, retry: decideRetry(job, error, backoff, warn) };
}

/**
 * An `UnrecoverableJobError` gives up; otherwise a task's `backoff` is asked, while retries
 * remain. Its answer is checked here, at run time, and a bad one fails safe: the default backoff,
 * never a lost job.
 */
function decideRetry(
  job: AttemptJob,
  error: Error,
  backoff: JobBackoff | undefined,
  warn: (message: string) => void,
): RetryDecision {
  if (error instanceof UnrecoverableJobError) return GIVE_UP;
  if (!backoff || job.attempt > job.maxRetries) return DEFAULT_BACKOFF;
  const about = `The backoff of task "${job.task}" for attempt ${job.attempt} of job ${job.id}`;
  let answer: unknown;
  try {
    answer = backoff(job.attempt, error);
  } catch (err) {
    warn(`${about} threw (${toError(err).message}); the default backoff applies.`);
    return DEFAULT_BACKOFF;
  }
  if (answer === 'giveUp') return GIVE_UP;
  if (
    typeof answer === 'number' &&
    Number.isFinite(answer) &&
    answer >= 0 &&
    answer <= MAX_RETRY_DELAY_LIMIT
  ) {
    return { giveUp: false, delay: answer };
  }
  warn(
    `${about} returned ${describeAnswer(answer)}, neither a number of seconds from 0 to ` +
      `${MAX_RETRY_DELAY_LIMIT} nor 'giveUp'; the default backoff applies.`,
  );
  return DEFAULT_BACKOFF;
}

function describeAnswer(answer: unknown): string {
  if (typeof answer === 'number' || typeof answer === 'function' || answer === undefined) {
    return String(answer);
  }
  try {
    return JSON.stringify(answer) ?? String(answer);
  } catch {
    return String(answer);
  }
}
