import { assertOptionsObject } from '../common/assert-options-object.js';
import { JOB_ID_PATTERN } from '../common/names.js';
import { optionChecks } from '../common/option-checks.js';
import { InvalidJobFilterError, InvalidJobOptionsError } from '../errors/jobs.errors.js';
import type { JobState } from './job-info.interface.js';
import type { JobFilter } from './job-filter.interface.js';
import { errorPattern } from './job-filter.sql.js';
import type { FilterValues } from './job-filter.sql.js';
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
export interface ValidatedJobFilter<State extends JobState> extends FilterValues {
  readonly states: readonly State[];
}

/** Every field a filter may have; each is also a condition of `filterSql` (job-filter.sql.ts). */
const KNOWN_KEYS = new Set<string>([
  'task',
  'queue',
  'groupKey',
  'uniqueKey',
  'state',
  'before',
  'after',
  'error',
]);
/** The longest error text a filter may search for. */
export const MAX_ERROR_FILTER = 200;

/**
 * Every check of a bulk call's filter, before anything touches the database. `allowed` are the
 * states the call takes, `defaults` those it takes without `state`; `stateHint`, what to do
 * instead, ends the message of a state refused.
 */
export function validateJobFilter<State extends JobState>(
  filter: JobFilter<State> | undefined,
  allowed: readonly State[],
  defaults: readonly State[],
  stateHint = '',
): ValidatedJobFilter<State> {
  const fail = (field: string, value: unknown, expectation: string) =>
    new InvalidJobFilterError(field, value, expectation);
  const given = filter ?? {};
  assertOptionsObject(given, KNOWN_KEYS, fail);
  const { task, queue, groupKey, uniqueKey, state, before, after, error } =
    given as JobFilter<State>;
  for (const [field, value] of Object.entries({ task, queue, groupKey, uniqueKey })) {
    if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
      throw fail(field, value, 'must be a non-empty string');
    }
  }
  if (
    error !== undefined &&
    (typeof error !== 'string' ||
      error.length === 0 ||
      [...error].length > MAX_ERROR_FILTER ||
      error.includes('\0'))
  ) {
    throw fail('error', error, `must be text of 1 to ${MAX_ERROR_FILTER} characters`);
  }
  const states = state === undefined ? defaults : Array.isArray(state) ? state : [state];
  if (states.length === 0 || states.some((one: unknown) => !allowed.includes(one as State))) {
    throw fail(
      'state',
      state,
      `must be one of ${allowed.join(', ')}, or an array of them${stateHint}`,
    );
  }
  for (const [field, value] of Object.entries({ before, after })) {
    if (value !== undefined && !(value instanceof Date && !Number.isNaN(value.getTime()))) {
      throw fail(field, value, 'must be a valid Date');
    }
  }
  return {
    task: task ?? null,
    queue: queue ?? null,
    groupKey: groupKey ?? null,
    uniqueKey: uniqueKey ?? null,
    states: [...new Set(states)],
    createdBefore: before ?? null,
    createdAfter: after ?? null,
    errorPattern: error === undefined ? null : errorPattern(error),
  };
}
