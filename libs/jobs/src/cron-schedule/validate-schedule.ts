import { assertOptionsObject } from '../common/assert-options-object.js';
import { serialisePayload } from '../common/json-payload.js';
import { NAME_PATTERN, NAME_RULE } from '../common/names.js';
import {
  InvalidCronExpressionError,
  InvalidScheduleError,
  InvalidTimeZoneError,
} from '../errors/jobs.errors.js';
import type {
  CronScheduleOptions,
  MissedSlotPolicy,
  OverlapPolicy,
  ScheduleSource,
} from './cron-schedule.interface.js';
import { hasHashedField, parseWallClockCron } from './cron-parser.js';
import { oneOffInstant } from './slot-expansion.js';
import { isKnownTimeZone } from './time-zones.js';

/** A schedule that passed every check, ready for `jobSchedule`. */
export interface ValidatedSchedule {
  readonly name: string;
  readonly task: string;
  readonly cron: string;
  readonly timezone: string;
  /** Serialised JSON. */
  readonly payload: string;
  readonly missedSlots: MissedSlotPolicy;
  /** Seconds, the default applied: instances that judge lateness all read it from the row. */
  readonly missedSlotGrace: number;
  readonly overlap: OverlapPolicy;
  readonly source: ScheduleSource;
}

export const DEFAULT_SCHEDULE_TIMEZONE = 'UTC';

const MISSED_SLOT_POLICIES: readonly MissedSlotPolicy[] = ['skip', 'runOnce'];
const OVERLAP_POLICIES: readonly OverlapPolicy[] = ['allow', 'skip'];
const KNOWN_KEYS = new Set<string>([
  'name',
  'task',
  'cron',
  'timezone',
  'payload',
  'missedSlots',
  'missedSlotGrace',
  'overlap',
]);

/**
 * Every check of a schedule, before anything touches the database. cron-parser alone is not
 * enough: it accepts `""`, four-field expressions and `H` fields, and knows nothing of the zone
 * (see `parseWallClockCron`), so the field count, `H` and the zone are checked here.
 * `defaultGrace` is the module's `missedSlotGrace`.
 */
export function validateSchedule(
  options: CronScheduleOptions,
  source: ScheduleSource,
  defaultGrace: number,
): ValidatedSchedule {
  const task = options?.task;
  const label =
    typeof options?.name === 'string'
      ? options.name
      : typeof task === 'string'
        ? task
        : '(unnamed)';
  assertOptionsObject(
    options,
    KNOWN_KEYS,
    (field, value, expectation) => new InvalidScheduleError(label, field, value, expectation),
  );
  if (typeof task !== 'string' || task.length === 0) {
    throw new InvalidScheduleError(label, 'task', task, 'must be a non-empty task name');
  }
  const name = options.name ?? task;
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new InvalidScheduleError(label, 'name', name, `must be ${NAME_RULE}`);
  }
  const timezone = validateTimeZone(name, options.timezone ?? DEFAULT_SCHEDULE_TIMEZONE);
  const cron = validateCronExpression(name, options.cron);
  const missedSlots = options.missedSlots ?? 'skip';
  if (!MISSED_SLOT_POLICIES.includes(missedSlots)) {
    throw new InvalidScheduleError(name, 'missedSlots', missedSlots, 'must be "skip" or "runOnce"');
  }
  const missedSlotGrace = options.missedSlotGrace ?? defaultGrace;
  if (
    typeof missedSlotGrace !== 'number' ||
    !Number.isFinite(missedSlotGrace) ||
    missedSlotGrace <= 0
  ) {
    throw new InvalidScheduleError(
      name,
      'missedSlotGrace',
      missedSlotGrace,
      'must be a positive number of seconds',
    );
  }
  const overlap = options.overlap ?? 'allow';
  if (!OVERLAP_POLICIES.includes(overlap)) {
    throw new InvalidScheduleError(name, 'overlap', overlap, 'must be "allow" or "skip"');
  }
  const payload = serialisePayload(options.payload === undefined ? {} : options.payload);
  return { name, task, cron, timezone, payload, missedSlots, missedSlotGrace, overlap, source };
}

function validateTimeZone(schedule: string, timezone: unknown): string {
  if (!isKnownTimeZone(timezone)) throw new InvalidTimeZoneError(schedule, timezone);
  return timezone;
}

function validateCronExpression(schedule: string, expression: unknown): string {
  if (expression instanceof Date) {
    const instant = Number.isNaN(expression.getTime()) ? '' : expression.toISOString();
    if (!oneOffInstant(instant)) {
      throw new InvalidCronExpressionError(schedule, expression, 'or a valid Date of years 0-9999');
    }
    return instant;
  }
  if (typeof expression !== 'string')
    throw new InvalidCronExpressionError(
      schedule,
      expression,
      'given as a string, or a Date (a one-off slot)',
    );
  const cron = expression.trim();
  const fields = cron.split(/\s+/).filter(Boolean);
  const alias = fields.length === 1 && fields[0].startsWith('@');
  if (!alias && fields.length !== 5 && fields.length !== 6) {
    throw new InvalidCronExpressionError(schedule, expression, `but it has ${fields.length}`);
  }
  if (hasHashedField(cron)) {
    throw new InvalidCronExpressionError(
      schedule,
      expression,
      'without "H" (hashed) fields, which would pick other times on every planning round: write the minutes and hours out',
    );
  }
  try {
    // A first slot proves the expression can fire at all (`0 0 31 2 *` parses field by field).
    parseWallClockCron(cron, new Date()).next();
  } catch (err) {
    throw new InvalidCronExpressionError(
      schedule,
      expression,
      `and cron-parser refused it: ${(err as Error).message}`,
    );
  }
  return cron;
}
