import { DEFAULT_QUEUE } from '../options/defaults.js';
import type { TaskRegistry } from '../discovery/task-registry.js';
import { payloadJsonSchema } from '../task-schemas/payload-json-schema.js';

/**
 * A task this instance runs, as the admin API (`GET <path>/api/tasks`) and the dashboard list it.
 *
 * @publicApi
 */
export interface TaskInfo {
  name: string;
  queue: string;
  /** Runs in the worker-thread pool. */
  worker: boolean;
  /** Its cron schedule, if it has one (`@JobTask({ cron })`). */
  cron: string | null;
  /**
   * The JSON Schema (draft 2020-12) of the payload a producer sends, when the task's
   * `payloadSchema` comes from a library that provides one (Standard JSON Schema, as zod 4 does);
   * `null` otherwise.
   */
  payloadJsonSchema: Record<string, unknown> | null;
}

/** The tasks of `registry`, by name. A worker task's schemas live in its thread: it reported them. */
export function listTasks(registry: TaskRegistry): TaskInfo[] {
  return registry.names.map((name) => {
    const task = registry.get(name)!;
    const { options } = task;
    const jsonSchema = task.payloadJsonSchema ?? payloadJsonSchema(options.payloadSchema);
    return {
      name,
      queue: options.queue ?? DEFAULT_QUEUE,
      worker: options.worker === true,
      cron: typeof options.cron === 'string' ? options.cron : (options.cron?.toISOString() ?? null),
      payloadJsonSchema: jsonSchema ?? null,
    };
  });
}
