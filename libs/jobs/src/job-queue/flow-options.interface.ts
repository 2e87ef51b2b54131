import type { EntityManager } from 'typeorm';
import type { JobState } from '../common/job-states.js';
import type { TaskDefinition } from '../discovery/task-definition.js';
import type { AddJobOptions, AddTaskJobOptions } from './add-job-options.interface.js';

/**
 * What a flow job does when one of its dependencies did not complete (it failed with no retry
 * left, gave up, was interrupted for good, or was cancelled): `'cancel'` cancels it, with an error
 * naming that dependency, and so its own dependents in turn; `'run'` runs it once every dependency
 * has ended, and it sees the failure in `ctx.dependencies()`.
 *
 * @publicApi
 */
export type DependencyFailurePolicy = 'cancel' | 'run';

/**
 * One job of a flow: `addJob`'s options (a task name or a task definition, `payload`, `waitUntil`,
 * `priority`, `maxRetries`, `groupKey`) with its `ref` and what it depends on. `waitUntil` holds
 * from when its last dependency ends. `manager` and `notify` are the flow's; a flow job has no
 * `promise` (await any of them with `waitForJob`) and no `uniqueKey` (a key frees itself when its job
 * starts, so it could not stop a second flow from being added).
 *
 * @publicApi
 */
export type FlowJobOptions = (
  | Omit<AddJobOptions, 'manager' | 'notify' | 'promise' | 'uniqueKey'>
  | Omit<AddTaskJobOptions<TaskDefinition>, 'manager' | 'notify' | 'promise' | 'uniqueKey'>
) & {
  /** Its name within the flow: what `dependsOn` and `ctx.dependencies()` call it. */
  ref: string;
  /** The refs of the jobs of the same flow it waits for. Default: none (it is due at once). */
  dependsOn?: readonly string[];
  /** Default `'cancel'`. */
  onDependencyFailure?: DependencyFailurePolicy;
};

/**
 * What `addFlow` adds: jobs, some waiting for others, in one statement.
 *
 * @publicApi
 */
export interface AddFlowOptions {
  /** A label, shown with the flow (`getFlow`, the dashboard). At most 200 characters. */
  name?: string;
  /** Up to 10,000 jobs; refs unique, no cycle. */
  jobs: readonly FlowJobOptions[];
  /** Add the flow inside this TypeORM transaction: it exists only if the transaction commits. */
  manager?: EntityManager;
  /** Wake every instance now for the jobs due at once (`NOTIFY`). Default `true`. */
  notify?: boolean;
}

/**
 * What `addFlow` returns: the flow's id and each job's id by its ref.
 *
 * @publicApi
 */
export interface AddedFlow {
  flowId: string;
  jobs: Record<string, string>;
}

/**
 * A flow job's state as `getFlow` reports it: a `JobState`, `blocked` while a dependency has not
 * ended.
 *
 * @publicApi
 */
export interface FlowJobInfo {
  ref: string;
  id: string;
  task: string;
  state: JobState;
  dependsOn: string[];
}

/**
 * A flow as `getFlow` reports it. Its jobs in the order they were given to `addFlow`.
 *
 * @publicApi
 */
export interface FlowInfo {
  flowId: string;
  name: string | null;
  createdAt: Date;
  jobs: FlowJobInfo[];
}
