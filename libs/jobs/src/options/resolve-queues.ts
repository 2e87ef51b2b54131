import { assertOptionsObject } from '../common/assert-options-object.js';
import { NAME_PATTERN, NAME_RULE } from '../common/names.js';
import { optionChecks } from '../common/option-checks.js';
import { InvalidModuleOptionError } from '../errors/jobs.errors.js';
import type { QueueOptions, QueueRateLimit } from './queue-options.interface.js';

/** One queue's options after validation. Internal. */
export interface ResolvedQueueOptions {
  readonly name: string;
  readonly concurrency?: number;
  readonly globalConcurrency?: number;
  readonly rateLimit?: Readonly<QueueRateLimit>;
  readonly groupConcurrency?: number;
  readonly paused: boolean;
}

const KNOWN_QUEUE_OPTIONS = new Set<string>([
  'concurrency',
  'globalConcurrency',
  'rateLimit',
  'groupConcurrency',
  'paused',
]);
const KNOWN_RATE_LIMIT_OPTIONS = new Set<string>(['limit', 'periodSeconds']);

const fail = (option: string, value: unknown, expectation: string) =>
  new InvalidModuleOptionError(option, value, expectation);
const { integer, seconds, flag } = optionChecks(fail);

/**
 * Checks the `queues` module option, naming each bad value by its path (`queues.emails.rateLimit`),
 * and returns the queues by name.
 */
export function resolveQueues(
  value: unknown,
  option: string,
): ReadonlyMap<string, ResolvedQueueOptions> {
  if (value === undefined) return new Map();
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw fail(option, value, 'must be an object of queue options by queue name');
  }
  const queues = new Map<string, ResolvedQueueOptions>();
  for (const [name, options] of Object.entries(value)) {
    if (!NAME_PATTERN.test(name)) {
      throw fail(`${option}.${name}`, name, `must be named with ${NAME_RULE}`);
    }
    queues.set(name, resolveQueue(name, options as QueueOptions, `${option}.${name}`));
  }
  return queues;
}

function resolveQueue(name: string, options: unknown, path: string): ResolvedQueueOptions {
  assertOptionsObject(options, KNOWN_QUEUE_OPTIONS, (key, value, expectation) =>
    fail(key === '(options)' ? path : `${path}.${key}`, value, expectation),
  );
  const optional = (key: string) =>
    options[key] === undefined ? undefined : integer(`${path}.${key}`, options[key], 1);
  return {
    name,
    concurrency: optional('concurrency'),
    globalConcurrency: optional('globalConcurrency'),
    rateLimit: resolveRateLimit(options.rateLimit, `${path}.rateLimit`),
    groupConcurrency: optional('groupConcurrency'),
    paused: flag(`${path}.paused`, options.paused, false),
  };
}

function resolveRateLimit(value: unknown, path: string): QueueRateLimit | undefined {
  if (value === undefined) return undefined;
  assertOptionsObject(value, KNOWN_RATE_LIMIT_OPTIONS, (key, given, expectation) =>
    fail(key === '(options)' ? path : `${path}.${key}`, given, expectation),
  );
  if (value.periodSeconds === undefined) {
    throw fail(`${path}.periodSeconds`, undefined, 'must be a positive number of seconds');
  }
  return {
    limit: integer(`${path}.limit`, value.limit, 1),
    periodSeconds: seconds(`${path}.periodSeconds`, value.periodSeconds, 0),
  };
}

/** Whether the queue has a limit that holds across the cluster: its claims are then serialised. */
export function hasClusterLimit(queue: ResolvedQueueOptions): boolean {
  return (
    queue.globalConcurrency !== undefined ||
    queue.rateLimit !== undefined ||
    queue.groupConcurrency !== undefined
  );
}
