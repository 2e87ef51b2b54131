import { NAME_PATTERN } from '../common/names.js';
import { fixedOffsetZone, isKnownTimeZone } from '../cron-schedule/time-zones.js';
import type { JobTaskOptions } from '../discovery/job-task.interfaces.js';
import { InvalidCronOptionError } from '../errors/jobs.errors.js';
import type {
  DurableCronOptions,
  ResolvedJobsScheduleOptions,
} from './jobs-schedule-options.interface.js';

/** What `@Cron()` stores on a method: its options, with `cronTime`. */
export interface CronMethodMetadata {
  readonly cronTime?: unknown;
  readonly name?: unknown;
  readonly timeZone?: unknown;
  readonly utcOffset?: unknown;
  readonly disabled?: unknown;
  readonly waitForCompletion?: unknown;
  readonly threshold?: unknown;
}

/** The task (and schedule) of one `@Cron()` method, and whether its name was made up. */
export interface CronMethodTask {
  readonly options: JobTaskOptions;
  /** No `name` option: the schedule is named `Class.method`. */
  readonly unnamed: boolean;
}

/**
 * Turns a `@Cron()` method's options into the options of its task, whose static schedule has the
 * task's name:
 * - `name` names the schedule (default `Class.method`);
 * - `cronTime`: an expression, a `Date` or a Luxon `DateTime` (a one-off slot);
 * - `timeZone`, or `utcOffset` (minutes) as a fixed-offset zone; neither: the module's `timezone`;
 * - `disabled`: the task exists (runnable with `addJob`) but has no schedule;
 * - `waitForCompletion` is `overlap: 'skip'`;
 * - `threshold` (ms) is the schedule's `missedSlotGrace` (s); without it, the JobsModule's;
 * - `initialDelay` and `unrefTimeout` concern one process's timers: ignored.
 * `method` is `Class.method`, for messages and the default name.
 */
export function cronMethodTask(
  method: string,
  cron: CronMethodMetadata,
  durable: DurableCronOptions | undefined,
  defaults: ResolvedJobsScheduleOptions,
): CronMethodTask {
  const fail = (option: string, value: unknown, expectation: string) =>
    new InvalidCronOptionError(`@Cron() on ${method}`, option, value, expectation);
  const name = cron.name ?? method;
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw fail(
      'name',
      name,
      'must be 1-200 letters, digits or "_.:-" (it names a durable schedule and its task)',
    );
  }
  const task: JobTaskOptions = {
    name,
    maxRetries: durable?.maxRetries ?? defaults.maxRetries,
    timeout: durable?.timeout,
  };
  if (cron.disabled === true) return { options: task, unnamed: cron.name === undefined };
  return {
    options: {
      ...task,
      cron: cronTime(cron.cronTime, fail),
      timezone: zone(cron, defaults.timezone, fail),
      missedSlotGrace: grace(cron.threshold, fail),
      overlap: cron.waitForCompletion === true ? 'skip' : 'allow',
      missedSlots: durable?.missedSlots,
    },
    unnamed: cron.name === undefined,
  };
}

type Fail = (option: string, value: unknown, expectation: string) => Error;

function cronTime(value: unknown, fail: Fail): string | Date {
  if (typeof value === 'string' || value instanceof Date) return value;
  // A Luxon DateTime, which @Cron() accepts too (cron's own type), without depending on Luxon.
  const toJSDate = (value as { toJSDate?: unknown } | null)?.toJSDate;
  if (typeof toJSDate === 'function') return toJSDate.call(value) as Date;
  throw fail('cronTime', value, 'must be a cron expression, a Date or a Luxon DateTime');
}

function zone(cron: CronMethodMetadata, fallback: string, fail: Fail): string {
  const { timeZone, utcOffset } = cron;
  if (timeZone != null && utcOffset != null) {
    throw fail('utcOffset', utcOffset, `cannot be given with timeZone (${String(timeZone)})`);
  }
  if (utcOffset != null) {
    const fixed = typeof utcOffset === 'number' ? fixedOffsetZone(utcOffset) : null;
    if (fixed === null) {
      throw fail('utcOffset', utcOffset, 'must be whole minutes east of UTC, within ±840');
    }
    return fixed;
  }
  if (timeZone == null) return fallback;
  if (!isKnownTimeZone(timeZone)) {
    throw fail('timeZone', timeZone, 'must be an IANA time zone such as "Europe/Berlin"');
  }
  return timeZone;
}

function grace(threshold: unknown, fail: Fail): number | undefined {
  if (threshold == null) return undefined;
  if (typeof threshold !== 'number' || !Number.isFinite(threshold) || threshold <= 0) {
    throw fail('threshold', threshold, 'must be a positive number of milliseconds');
  }
  return threshold / 1000;
}
