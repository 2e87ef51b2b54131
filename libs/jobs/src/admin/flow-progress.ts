import { QUEUED_JOB_STATES } from '../common/job-states.js';
import type { JobState } from '../common/job-states.js';
import type { FlowInfo } from '../job-queue/flow-options.interface.js';

/**
 * Where a flow is, as the admin API and the dashboard show it: `running` while one of its jobs is
 * queued (blocked, pending or suspended) or running; once every job has ended, `failed` if one failed, was interrupted
 * for good or was skipped, else `cancelled` if one was cancelled, else `completed`. A failure comes
 * first: the dependents it cancelled are its consequence, not an operator's cancel.
 *
 * @publicApi
 */
export type FlowState = 'running' | 'completed' | 'failed' | 'cancelled';

/**
 * How far a flow has gone: its jobs counted by state, and its `FlowState`.
 *
 * @publicApi
 */
export interface FlowProgress {
  /** How many jobs the flow has. */
  jobCount: number;
  /**
   * Its jobs by state, the states with none left out. A job whose history retention has removed
   * counts in `jobCount` only.
   */
  counts: Partial<Record<JobState, number>>;
  state: FlowState;
}

/**
 * A flow as the admin API lists it (`GET <path>/api/flows`): its jobs counted, not listed.
 *
 * @publicApi
 */
export interface ListedFlowInfo extends Omit<FlowInfo, 'jobs'>, FlowProgress {}

const UNENDED: readonly JobState[] = [...QUEUED_JOB_STATES, 'active'];
const FAILED: readonly JobState[] = ['failed', 'interrupted', 'skipped'];

/** The state of a flow whose jobs are counted so. */
export function flowStateOf(counts: FlowProgress['counts']): FlowState {
  const any = (states: readonly JobState[]) => states.some((state) => (counts[state] ?? 0) > 0);
  if (any(UNENDED)) return 'running';
  if (any(FAILED)) return 'failed';
  if (any(['cancelled'])) return 'cancelled';
  return 'completed';
}

/** The progress of a flow whose jobs are these (`getFlow`'s). */
export function progressOf(jobs: readonly { state: JobState | null }[]): FlowProgress {
  const counts: FlowProgress['counts'] = {};
  for (const { state } of jobs) {
    if (state !== null) counts[state] = (counts[state] ?? 0) + 1;
  }
  return { jobCount: jobs.length, counts, state: flowStateOf(counts) };
}
