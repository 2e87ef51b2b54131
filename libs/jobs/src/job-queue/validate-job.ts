import { assertOptionsObject } from '../common/assert-options-object.js';
import { newJobId } from '../common/job-id.js';
import { serialisePayload } from '../common/json-payload.js';
import { INT4_MAX } from '../common/option-checks.js';
import { unstorableReason } from '../common/storable-text.js';
import { InvalidJobOptionsError, UnknownTaskError } from '../errors/jobs.errors.js';
import { isTaskDefinition } from '../discovery/task-definition.js';
import type { TaskDefinition } from '../discovery/task-definition.js';
import type { StandardSchemaV1 } from '../task-schemas/standard-schema.js';
import type { AddJobOptions, AddTaskJobOptions } from './add-job-options.interface.js';

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
  /** The queue of its task, as far as this instance knows it. */
  readonly queue: string;
  readonly groupKey: string | null;
  /** The schema the payload is checked against before the insert (`checkPayloads`), if any. */
  readonly payloadSchema: StandardSchemaV1 | undefined;
}

export interface JobDefaults {
  /** The task's own `maxRetries`, if it is registered here; `undefined` for unknown tasks. */
  taskMaxRetries(task: string): number | undefined;
  /** The queue a new job of the task is filed under (`TaskRegistry.queueForNewJob`). */
  taskQueue(task: string): string;
  /** The `payloadSchema` of a task whose handler runs on this instance. */
  taskPayloadSchema(task: string): StandardSchemaV1 | undefined;
  isKnownTask(task: string): boolean;
  knownTasks(): readonly string[];
  readonly allowUnknownTasks: boolean;
  readonly maxRetries: number;
}

/** A group key is a label (a tenant id), compared on every claim of its queue: kept short. */
const MAX_GROUP_KEY = 200;

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
  'groupKey',
]);

/** Every check of an `addJob` argument, in one place, before anything touches the database. */
export function validateJob(
  options: AddJobOptions | AddTaskJobOptions<TaskDefinition>,
  defaults: JobDefaults,
): ValidatedJob {
  assertOptionsObject(
    options,
    KNOWN_KEYS,
    (option, value, expectation) => new InvalidJobOptionsError(option, value, expectation),
  );
  // A definition makes its task known here, with its options, even with no handler on this
  // instance (one that only enqueues): the handler's instance runs it with the same definition.
  const definition = isTaskDefinition(options.task) ? options.task : undefined;
  const task = definition ? definition.name : options.task;
  if (typeof task !== 'string' || task.length === 0) {
    throw new InvalidJobOptionsError(
      'task',
      task,
      'must be a non-empty string or a task definition (defineTask)',
    );
  }
  assertStorable('task', task);
  if (!definition && !defaults.allowUnknownTasks && !defaults.isKnownTask(task)) {
    throw new UnknownTaskError(task, defaults.knownTasks());
  }
  const maxRetries =
    options.maxRetries ??
    defaults.taskMaxRetries(task) ??
    definition?.maxRetries ??
    defaults.maxRetries;
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
  if (uniqueKey !== undefined) assertStorable('uniqueKey', uniqueKey);
  const { groupKey } = options;
  if (
    groupKey !== undefined &&
    (typeof groupKey !== 'string' || groupKey.length === 0 || groupKey.length > MAX_GROUP_KEY)
  ) {
    throw new InvalidJobOptionsError(
      'groupKey',
      groupKey,
      `must be a non-empty string of at most ${MAX_GROUP_KEY} characters`,
    );
  }
  if (groupKey !== undefined) assertStorable('groupKey', groupKey);
  for (const flag of ['isScheduled', 'notify', 'promise'] as const) {
    if (options[flag] !== undefined && typeof options[flag] !== 'boolean') {
      throw new InvalidJobOptionsError(flag, options[flag], 'must be a boolean');
    }
  }
  return {
    id: newJobId(),
    task,
    payload: serialisePayload(options.payload === undefined ? {} : options.payload),
    priority,
    waitUntil: waitUntil ?? null,
    maxRetries,
    isScheduled: options.isScheduled ?? false,
    uniqueKey: uniqueKey ?? null,
    awaited: options.promise ?? false,
    queue: definition?.queue ?? defaults.taskQueue(task),
    groupKey: groupKey ?? null,
    payloadSchema: definition ? definition.payloadSchema : defaults.taskPayloadSchema(task),
  };
}

/**
 * A string option PostgreSQL would refuse (a `DatabaseError` for the caller) or silently change (a
 * lone surrogate becomes U+FFFD, so two keys could become one) is refused here, by name.
 */
function assertStorable(option: string, value: string): void {
  const reason = unstorableReason(value);
  if (reason) throw new InvalidJobOptionsError(option, value, `${reason}: use another string`);
}
