import { createRequire } from 'node:module';
import type { CronExpression, CronExpressionParser } from 'cron-parser';

const require = createRequire(import.meta.url);
let parser: typeof CronExpressionParser | undefined;

/**
 * cron-parser's parser, loaded by the first schedule that needs it rather than with the library:
 * with the date library it brings, it is a megabyte of a process's memory that an app without
 * schedules never uses. Required (cron-parser is CommonJS), not imported: schedules are validated
 * synchronously, as the module's options are.
 */
function cronExpressionParser(): typeof CronExpressionParser {
  parser ??= (require('cron-parser') as typeof import('cron-parser')).CronExpressionParser;
  return parser;
}

/**
 * Whether an expression has a Jenkins-style `H` (hashed) field. cron-parser draws `H` from a seed
 * that defaults to a fresh random one, so each expansion would pick other minutes. Month and
 * weekday names are dropped first: `THU` is no hash.
 */
export function hasHashedField(cron: string): boolean {
  return /H/.test(cron.replace(/[a-z]{3}/gi, ''));
}

/**
 * `cron` as cron-parser's iterator over wall-clock times, from `wallClock` (a wall-clock time
 * written as if it were UTC). cron-parser never sees a zone: read in UTC, its answer is the
 * expression's calendar alone, and `wall-clock.ts` alone maps a wall-clock time to instants.
 * Throws for an expression cron-parser refuses and for `H` fields (see `hasHashedField`).
 */
export function parseWallClockCron(cron: string, wallClock: Date): CronExpression {
  if (hasHashedField(cron)) {
    throw new Error('"H" (hashed) fields are not supported: write the minutes and hours out');
  }
  return cronExpressionParser().parse(cron, { currentDate: wallClock, tz: 'UTC' });
}
