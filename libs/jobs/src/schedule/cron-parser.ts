import { createRequire } from 'node:module';
import type { CronExpressionParser } from 'cron-parser';

const require = createRequire(import.meta.url);
let parser: typeof CronExpressionParser | undefined;

/**
 * cron-parser's parser, loaded by the first schedule that needs it rather than with the library:
 * with the date library it brings, it is a megabyte of a process's memory that an app without
 * schedules never uses. Required (cron-parser is CommonJS), not imported: schedules are validated
 * synchronously, as the module's options are.
 */
export function cronExpressionParser(): typeof CronExpressionParser {
  parser ??= (require('cron-parser') as typeof import('cron-parser')).CronExpressionParser;
  return parser;
}
