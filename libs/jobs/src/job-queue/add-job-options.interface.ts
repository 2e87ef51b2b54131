import type { EntityManager } from 'typeorm';
import type { TaskDefinition, TaskPayloadInput } from '../discovery/task-definition.js';

/**
 * What to enqueue. The seed's fields keep their meaning; `priority`, `uniqueKey`, `groupKey` and
 * `manager` are new. There is no `queue`: a job is in its task's queue (`@JobTask({ queue })`), so
 * that a queue's limits hold for every job of the tasks they protect.
 *
 * @publicApi
 */
export interface AddJobOptions<Payload = unknown> {
  /**
   * The task name to execute: a `@JobTask()` name. A task definition (`defineTask`) goes here too
   * (see `AddTaskJobOptions`).
   */
  task: string;
  /** JSON data handed to the task. Default `{}`. */
  payload?: Payload;
  /** The job does not run before this time. Default: now. */
  waitUntil?: Date;
  /** Retries after the first attempt. Default: the task's, else the module's `maxRetries`. */
  maxRetries?: number;
  /** Whether this is a scheduled (cron) job. */
  isScheduled?: boolean;
  /** Wake every instance now (`NOTIFY`). Default `true`; without it the job waits for a poll. */
  notify?: boolean;
  /** Return a `promise` that settles when the job ends, on whichever instance it runs. */
  promise?: boolean;
  /**
   * Higher runs first; among equal priorities, the job due first (`waitUntil`), then the one
   * inserted first. Integer, default 0.
   */
  priority?: number;
  /**
   * At most one pending job per key: adding a job whose key is already pending returns the
   * pending job's id (with `deduplicated: true`) instead of inserting. The key is free again once
   * the job starts.
   */
  uniqueKey?: string;
  /**
   * The job's group (a tenant id, for example), for its queue's `groupConcurrency`: at most that
   * many jobs of one group run at once across the cluster, and one group's backlog does not hold
   * back another's. Without a `groupConcurrency` on the queue it is only recorded. At most 200
   * characters.
   */
  groupKey?: string;
  /**
   * Enqueue inside this TypeORM transaction: the job exists (and is notified) only if it commits.
   * The manager must belong to the same database as the module.
   */
  manager?: EntityManager;
}

/**
 * `addJob`'s options for a task given by its definition (`defineTask`): `payload` is typed as the
 * input of its `payloadSchema`, and may be left out only where that input accepts `{}` (what is
 * stored then). The definition makes the task known to the instance (no `allowUnknownTasks`), and
 * its `maxRetries` and `queue` apply where no handler here says otherwise.
 *
 * @publicApi
 */
export type AddTaskJobOptions<Definition extends TaskDefinition> = Omit<
  AddJobOptions,
  'task' | 'payload'
> & { task: Definition } & (Record<never, never> extends TaskPayloadInput<Definition>
    ? { payload?: TaskPayloadInput<Definition> }
    : { payload: TaskPayloadInput<Definition> });

/**
 * What `addJob` returns; `Result` is what the job's task returns, which its `promise` resolves to.
 *
 * @publicApi
 */
export interface AddedJob<Result = unknown> {
  /**
   * The job's id: a UUID of version 7, whose first 48 bits are the time it was made at (so ids sort
   * by creation, to the millisecond; within one, at random).
   */
  id: string;
  /** `true` when `uniqueKey` matched a pending job, whose id this is. */
  deduplicated: boolean;
  /**
   * With `promise: true`: resolves with the job's result (what its task returned; `undefined` when
   * it returned nothing) when the job completes, rejects with `JobFailedError` when it fails with
   * no retries left or its task gave up, `JobCancelledError` when it is cancelled, or
   * `JobPromiseTimeoutError` after `promiseTimeout`. When the add was deduplicated, it settles with
   * the pending job it was folded into (within `pollingCheck` of that job's end if the job was
   * added without `promise`, since its end is then not notified).
   */
  promise?: Promise<Result>;
}
