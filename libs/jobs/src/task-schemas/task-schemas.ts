import { JobSnooze, TaskSchemaError } from '../errors/jobs.errors.js';
import type { StandardSchemaV1 } from './standard-schema.js';

/** The schemas a task may declare (`@JobTask()` / `defineTask()` options). */
export interface TaskSchemas {
  readonly payloadSchema?: StandardSchemaV1;
  readonly resultSchema?: StandardSchemaV1;
}

/**
 * Whether `value` is a Standard Schema v1 object (zod 4, valibot 1, arktype 2, ...): checked once,
 * when a task is declared, so that a wrong `payloadSchema` fails the boot, not the first job.
 */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  const props = (value as { '~standard'?: Partial<StandardSchemaV1.Props> } | null)?.['~standard'];
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    props?.version === 1 &&
    typeof props.validate === 'function'
  );
}

/**
 * Runs a task whose options declare a schema: its handler (`run`) gets the stored payload as the
 * `payloadSchema` parses it (defaults applied, transforms done), and what it returns is replaced
 * by what the `resultSchema` makes of it, the value stored and resolved. A refusal is a
 * `TaskSchemaError` (no retry). A snooze is no result: it is not checked.
 *
 * Only tasks with a schema come here: a task without one runs its handler directly, with no await
 * or allocation added (the runner's and the pool thread's hot path).
 */
export async function runWithSchemas(
  task: string,
  schemas: TaskSchemas,
  payload: unknown,
  run: (payload: unknown) => unknown,
): Promise<unknown> {
  const { payloadSchema, resultSchema } = schemas;
  let input = payload;
  if (payloadSchema) {
    const parsed = await payloadSchema['~standard'].validate(payload);
    if (parsed.issues) throw new TaskSchemaError(task, 'payload', parsed.issues);
    input = parsed.value;
  }
  const value = await run(input);
  if (!resultSchema || value instanceof JobSnooze) return value;
  const checked = await resultSchema['~standard'].validate(value);
  if (checked.issues) throw new TaskSchemaError(task, 'result', checked.issues);
  return checked.value;
}
