import { assertOptionsObject } from '../common/assert-options-object.js';
import { JOB_ID_PATTERN } from '../common/names.js';
import { optionChecks } from '../common/option-checks.js';
import { InvalidJobFilterError, InvalidJobOptionsError } from '../errors/jobs.errors.js';
import type { JobState } from './job-info.interface.js';
import type { JobFilter } from './job-filter.interface.js';
import type { WaitForJobOptions } from './wait-for-job-options.interface.js';

/**
 * The longest wait a timer can hold (2^31 - 1 ms, about 24.8 days): Node fires a longer one at
 * once instead.
 */
const MAX_WAIT_SECONDS = 2_147_483;

/** The check of a job id a call names (`getJob`, `waitForJob`, `cancelJob`, ...). */
export function assertJobId(id: unknown, option = 'id'): void {
  if (typeof id !== 'string' || !JOB_ID_PATTERN.test(id)) {
    throw new InvalidJobOptionsError(option, id, 'must be a job id (a UUID)');
  }
}

/** The checks of `waitForJob`'s options; returns its timeout, if one was given. */
export function validateWaitOptions(options: WaitForJobOptions | undefined): number | undefined {
  const fail = (option: string, value: unknown, expectation: string) =>
    new InvalidJobOptionsError(option, value, expectation);
  const given = options ?? {};
  assertOptionsObject(given, new Set(['timeout']), fail);
  const { timeout } = given as WaitForJobOptions;
  if (timeout === undefined) return undefined;
  optionChecks(fail).seconds('timeout', timeout, 0);
  if (timeout > MAX_WAIT_SECONDS) {
    throw fail('timeout', timeout, `must be at most ${MAX_WAIT_SECONDS} seconds`);
  }
  return timeout;
}

/** A filter that passed every check: what the bulk statements take. */
export interface ValidatedJobFilter<State extends JobState> {
  readonly task: string | null;
  readonly queue: string | null;
  readonly states: readonly State[];
  readonly before: Date | null;
}

/** Every field a filter may have; each is also a condition of the statements' `matching` (job-queue.sql.ts). */
const KNOWN_KEYS = new Set<string>(['task', 'queue', 'state', 'before']);

/**
 * Every check of a bulk call's filter, before anything touches the database. `allowed` are the
 * states the call takes, `defaults` those it takes without `state`.
 */
export function validateJobFilter<State extends JobState>(
  filter: JobFilter<State> | undefined,
  allowed: readonly State[],
  defaults: readonly State[],
): ValidatedJobFilter<State> {
  const fail = (field: string, value: unknown, expectation: string) =>
    new InvalidJobFilterError(field, value, expectation);
  const given = filter ?? {};
  assertOptionsObject(given, KNOWN_KEYS, fail);
  const { task, queue, state, before } = given as JobFilter<State>;
  if (task !== undefined && (typeof task !== 'string' || task.length === 0)) {
    throw fail('task', task, 'must be a non-empty string');
  }
  if (queue !== undefined && (typeof queue !== 'string' || queue.length === 0)) {
    throw fail('queue', queue, 'must be a non-empty string');
  }
  const states = state === undefined ? defaults : Array.isArray(state) ? state : [state];
  if (states.length === 0 || states.some((one: unknown) => !allowed.includes(one as State))) {
    throw fail('state', state, `must be one of ${allowed.join(', ')}, or an array of them`);
  }
  if (before !== undefined && !(before instanceof Date && !Number.isNaN(before.getTime()))) {
    throw fail('before', before, 'must be a valid Date');
  }
  return {
    task: task ?? null,
    queue: queue ?? null,
    states: [...new Set(states)],
    before: before ?? null,
  };
}
