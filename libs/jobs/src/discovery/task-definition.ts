import type { JobSnooze } from '../errors/jobs.errors.js';
import type { StandardSchemaV1 } from '../task-schemas/standard-schema.js';
import type { JobTaskOptions } from './job-task.interfaces.js';
import { validateTaskOptions } from './validate-task-options.js';

/**
 * A task as both sides import it: its name, its `@JobTask()` options, and the Standard Schema v1
 * objects (zod 4, valibot 1, arktype 2, ...) of its payload and result, whose types it carries.
 * Made by `defineTask`; given to `@JobTask(definition)` on the handler and to `addJob({ task })`
 * by producers.
 *
 * @publicApi
 */
export interface TaskDefinition<
  PayloadSchema extends StandardSchemaV1 | undefined = StandardSchemaV1 | undefined,
  ResultSchema extends StandardSchemaV1 | undefined = StandardSchemaV1 | undefined,
> extends JobTaskOptions {
  readonly payloadSchema?: PayloadSchema;
  readonly resultSchema?: ResultSchema;
  /** Set by `defineTask`: tells a definition from a payload type, and from plain options. */
  readonly '~taskDefinition': true;
}

/**
 * The argument of `defineTask`: `@JobTask()`'s options with the task's schemas.
 *
 * @publicApi
 */
export type TaskDefinitionOptions<
  PayloadSchema extends StandardSchemaV1 | undefined,
  ResultSchema extends StandardSchemaV1 | undefined,
> = Omit<JobTaskOptions, 'payloadSchema' | 'resultSchema'> & {
  /** Validates the payload at enqueue and parses it again at run (see `JobTaskOptions`). */
  readonly payloadSchema?: PayloadSchema;
  /** Validates what the task returns before it is stored (see `JobTaskOptions`). */
  readonly resultSchema?: ResultSchema;
};

/**
 * The payload `addJob` takes for a defined task: its `payloadSchema`'s input (`unknown` without one).
 *
 * @publicApi
 */
export type TaskPayloadInput<Definition extends TaskDefinition> =
  Definition extends TaskDefinition<infer Schema extends StandardSchemaV1, any>
    ? StandardSchemaV1.InferInput<Schema>
    : unknown;

/**
 * The payload a defined task's handler gets: its `payloadSchema`'s output (defaults applied,
 * transforms done). Type a handler's `run(payload: TaskPayload<typeof MyTask>, ctx)` with it:
 * TypeScript does not type a method's parameters from an `implements` clause.
 *
 * @publicApi
 */
export type TaskPayload<Definition extends TaskDefinition> =
  Definition extends TaskDefinition<infer Schema extends StandardSchemaV1, any>
    ? StandardSchemaV1.InferOutput<Schema>
    : unknown;

/**
 * What a defined task's handler returns: its `resultSchema`'s input (`unknown` without one).
 *
 * @publicApi
 */
export type TaskResultInput<Definition extends TaskDefinition> =
  Definition extends TaskDefinition<any, infer Schema extends StandardSchemaV1>
    ? StandardSchemaV1.InferInput<Schema>
    : unknown;

/**
 * A defined task's result, as stored, read by `getJob` and resolved by `addJob`'s `promise` and
 * `waitForJob`: its `resultSchema`'s output (`unknown` without one).
 *
 * @publicApi
 */
export type TaskResult<Definition extends TaskDefinition> =
  Definition extends TaskDefinition<any, infer Schema extends StandardSchemaV1>
    ? StandardSchemaV1.InferOutput<Schema>
    : unknown;

/**
 * `Task`'s result when it is a task definition (`TaskResult`), else `Task` itself: the type
 * parameter of `waitForJob` and `getJob` takes either a definition or the result's type.
 *
 * @publicApi
 */
export type ResultOf<Task> = Task extends TaskDefinition ? TaskResult<Task> : Task;

/**
 * Defines a task once, for both sides: the handler (`@JobTask(SendEmail)`, `implements
 * JobTaskHandler<typeof SendEmail>`) and its producers (`addJob({ task: SendEmail, payload })`,
 * where the payload is typed as the schema's input and checked before anything is written).
 *
 * ```ts
 * export const SendEmail = defineTask({
 *   name: 'sendEmail',
 *   payloadSchema: z.object({ to: z.email(), locale: z.string().default('en') }),
 *   resultSchema: z.object({ messageId: z.string() }),
 * });
 * ```
 *
 * The options are checked here, as `@JobTask()` checks its own (`InvalidJobTaskOptionError`).
 *
 * @publicApi
 */
export function defineTask<
  PayloadSchema extends StandardSchemaV1 | undefined = undefined,
  ResultSchema extends StandardSchemaV1 | undefined = undefined,
>(
  definition: TaskDefinitionOptions<PayloadSchema, ResultSchema>,
): TaskDefinition<PayloadSchema, ResultSchema> {
  const task = { ...definition, '~taskDefinition': true } as TaskDefinition<
    PayloadSchema,
    ResultSchema
  >;
  validateTaskOptions(task, `defineTask(${JSON.stringify(definition?.name)})`);
  return Object.freeze(task);
}

/** Whether `value` was made by `defineTask`. */
export function isTaskDefinition(value: unknown): value is TaskDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Partial<TaskDefinition>)['~taskDefinition'] === true
  );
}

/**
 * The payload a `JobTaskHandler<Payload>` gets: a definition's `payloadSchema` output, or `Payload`.
 *
 * @publicApi
 */
export type HandlerPayload<Payload> = Payload extends TaskDefinition
  ? TaskPayload<Payload>
  : Payload;

/**
 * What a `JobTaskHandler<Payload, Result>` returns: a definition's `resultSchema` input, or
 * `Result`; or a snooze.
 *
 * @publicApi
 */
export type HandlerReturn<Payload, Result> =
  (Payload extends TaskDefinition ? TaskResultInput<Payload> : Result) | JobSnooze;
