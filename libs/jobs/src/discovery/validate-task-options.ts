import { assertOptionsObject } from '../common/assert-options-object.js';
import { InvalidJobTaskOptionError } from '../errors/jobs.errors.js';
import { NAME_PATTERN, NAME_RULE } from '../common/names.js';
import { optionChecks } from '../common/option-checks.js';
import { isStandardSchema } from '../task-schemas/task-schemas.js';
import type { JobTaskOptions } from './job-task.interfaces.js';

const KNOWN_OPTIONS = new Set<string>([
  'name',
  'maxRetries',
  'timeout',
  'queue',
  'worker',
  'cron',
  'timezone',
  'payload',
  'missedSlots',
  'missedSlotGrace',
  'overlap',
  'backoff',
  'transactional',
  'payloadSchema',
  'resultSchema',
  '~taskDefinition',
]);

/** Options that only mean something on a task with a `cron` schedule. */
const CRON_ONLY_OPTIONS = [
  'timezone',
  'payload',
  'missedSlots',
  'missedSlotGrace',
  'overlap',
] as const;

/**
 * Checks the options of one `@JobTask()` at boot, with the messages module options get, so that a
 * bad `timeout` or `maxRetries` fails the boot naming its class, not the first enqueue as a SQL
 * cast error. The cron expression and zone are checked with the task's schedule, also at boot.
 */
export function validateTaskOptions(options: unknown, handler: string): JobTaskOptions {
  const fail = (option: string, value: unknown, expectation: string) =>
    new InvalidJobTaskOptionError(handler, option, value, expectation);
  assertOptionsObject(options, KNOWN_OPTIONS, fail);
  const { integer, seconds, flag } = optionChecks(fail);
  const { name } = options;
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw fail('name', name, `must be ${NAME_RULE}`);
  }
  if (options.maxRetries !== undefined) integer('maxRetries', options.maxRetries, 0);
  seconds('timeout', options.timeout, 1);
  const { queue } = options;
  if (queue !== undefined && (typeof queue !== 'string' || !NAME_PATTERN.test(queue))) {
    throw fail('queue', queue, `must be ${NAME_RULE}`);
  }
  flag('worker', options.worker, false);
  if (options.backoff !== undefined && typeof options.backoff !== 'function') {
    throw fail(
      'backoff',
      options.backoff,
      'must be a function (attempt, error) => seconds | "giveUp"',
    );
  }
  if (flag('transactional', options.transactional, false) && options.worker === true) {
    throw fail(
      'transactional',
      true,
      'cannot be combined with "worker: true": a transaction is a connection of the main thread',
    );
  }
  for (const option of ['payloadSchema', 'resultSchema'] as const) {
    if (options[option] !== undefined && !isStandardSchema(options[option])) {
      throw fail(
        option,
        options[option],
        'must be a Standard Schema v1 object (zod 4, valibot 1, ...)',
      );
    }
  }
  if (options.cron === undefined) {
    for (const option of CRON_ONLY_OPTIONS) {
      if (options[option] !== undefined) {
        throw fail(option, options[option], 'only applies to a task with a "cron" schedule');
      }
    }
  }
  return options as unknown as JobTaskOptions;
}
