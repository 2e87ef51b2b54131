import { assertOptionsObject } from '../common/assert-options-object.js';
import { randomUUID } from 'node:crypto';
import {
  InvalidJobOptionsError,
  InvalidPayloadError,
  UnknownTaskError,
} from '../errors/jobs.errors.js';
import type { AddJobOptions } from './add-job-options.interface.js';

/** A job that passed every check, ready for the insert. */
export interface ValidatedJob {
  readonly id: string;
  readonly task: string;
  readonly payload: string;
  readonly priority: number;
  readonly waitUntil: Date | null;
  readonly maxRetries: number;
  readonly isScheduled: boolean;
  readonly uniqueKey: string | null;
  readonly awaited: boolean;
}

export interface JobDefaults {
  /** The task's own `maxRetries`, if it is registered here; `undefined` for unknown tasks. */
  taskMaxRetries(task: string): number | undefined;
  isKnownTask(task: string): boolean;
  knownTasks(): readonly string[];
  readonly allowUnknownTasks: boolean;
  readonly maxRetries: number;
}

const INT4_MAX = 2_147_483_647;
const KNOWN_KEYS = new Set<string>([
  'task',
  'payload',
  'waitUntil',
  'maxRetries',
  'isScheduled',
  'notify',
  'promise',
  'priority',
  'uniqueKey',
  'manager',
]);

/** Every check of an `addJob` argument, in one place, before anything touches the database. */
export function validateJob(options: AddJobOptions, defaults: JobDefaults): ValidatedJob {
  assertOptionsObject(
    options,
    KNOWN_KEYS,
    (option, value, expectation) => new InvalidJobOptionsError(option, value, expectation),
  );
  const { task } = options;
  if (typeof task !== 'string' || task.length === 0) {
    throw new InvalidJobOptionsError('task', task, 'must be a non-empty string');
  }
  if (!defaults.allowUnknownTasks && !defaults.isKnownTask(task)) {
    throw new UnknownTaskError(task, defaults.knownTasks());
  }
  const maxRetries = options.maxRetries ?? defaults.taskMaxRetries(task) ?? defaults.maxRetries;
  if (!Number.isSafeInteger(maxRetries) || maxRetries < 0 || maxRetries > INT4_MAX) {
    throw new InvalidJobOptionsError('maxRetries', options.maxRetries, 'must be an integer >= 0');
  }
  const priority = options.priority ?? 0;
  if (!Number.isSafeInteger(priority) || Math.abs(priority) > INT4_MAX) {
    throw new InvalidJobOptionsError('priority', options.priority, 'must be a 32-bit integer');
  }
  const { waitUntil } = options;
  if (
    waitUntil !== undefined &&
    !(waitUntil instanceof Date && !Number.isNaN(waitUntil.getTime()))
  ) {
    throw new InvalidJobOptionsError('waitUntil', waitUntil, 'must be a valid Date');
  }
  const { uniqueKey } = options;
  if (uniqueKey !== undefined && (typeof uniqueKey !== 'string' || uniqueKey.length === 0)) {
    throw new InvalidJobOptionsError('uniqueKey', uniqueKey, 'must be a non-empty string');
  }
  for (const flag of ['isScheduled', 'notify', 'promise'] as const) {
    if (options[flag] !== undefined && typeof options[flag] !== 'boolean') {
      throw new InvalidJobOptionsError(flag, options[flag], 'must be a boolean');
    }
  }
  return {
    id: randomUUID(),
    task,
    payload: serialisePayload(options.payload === undefined ? {} : options.payload),
    priority,
    waitUntil: waitUntil ?? null,
    maxRetries,
    isScheduled: options.isScheduled ?? false,
    uniqueKey: uniqueKey ?? null,
    awaited: options.promise ?? false,
  };
}

/**
 * `JSON.stringify` quietly drops functions, turns `NaN` into `null` and throws an unhelpful
 * message on cycles and BigInt: a task would then run on data other than what was enqueued. Refuse
 * instead, naming the path of the first value that would not survive.
 */
export function serialisePayload(payload: unknown): string {
  assertJsonSafe(payload, '$', new Set());
  return JSON.stringify(payload);
}

function assertJsonSafe(value: unknown, path: string, ancestors: Set<object>): void {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value))
        throw new InvalidPayloadError(path, `is ${value}, which JSON turns into null`);
      return;
    case 'bigint':
      throw new InvalidPayloadError(path, 'is a BigInt; pass it as a string');
    case 'function':
      throw new InvalidPayloadError(path, 'is a function');
    case 'symbol':
      throw new InvalidPayloadError(path, 'is a symbol');
    case 'undefined':
      throw new InvalidPayloadError(path, 'is undefined');
  }
  if (value === null) return;
  const object = value as object;
  if (typeof (object as { toJSON?: unknown }).toJSON === 'function') {
    // Dates and the like: what crosses is what toJSON returns.
    assertJsonSafe((object as { toJSON: () => unknown }).toJSON(), path, ancestors);
    return;
  }
  if (ancestors.has(object)) throw new InvalidPayloadError(path, 'refers back to itself (a cycle)');
  ancestors.add(object);
  if (Array.isArray(object)) {
    object.forEach((item, index) => assertJsonSafe(item, `${path}[${index}]`, ancestors));
  } else {
    const proto = Object.getPrototypeOf(object);
    if (proto !== Object.prototype && proto !== null) {
      throw new InvalidPayloadError(
        path,
        `is a ${proto?.constructor?.name ?? 'class'} instance, not plain data`,
      );
    }
    for (const [key, item] of Object.entries(object)) {
      if (item !== undefined) assertJsonSafe(item, `${path}.${key}`, ancestors);
    }
  }
  ancestors.delete(object);
}
