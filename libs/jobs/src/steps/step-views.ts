import type { JobStepInfo, JobWaitingFor } from './step-info.interface.js';

/** A queued job's `"waitingFor"` as stored: JSON text, or as `pg` parsed the `jsonb`. */
export type StoredWaitingFor =
  string | { until?: string | null; event?: string; jobs?: string[] } | null;

/** A step as `getJob`'s statement gives it (JSON: times as text, no error as `null`). */
export interface StoredStep {
  name: string;
  state: JobStepInfo['state'];
  startedAt: string;
  endedAt: string | null;
  error: string | null;
}

/** A queued job's `"waitingFor"` as `JobInfo.waitingFor` gives it. */
export function parseWaitingFor(stored: StoredWaitingFor): JobWaitingFor | null {
  if (stored === null) return null;
  const wait =
    typeof stored === 'string'
      ? (JSON.parse(stored) as Exclude<StoredWaitingFor, string | null>)
      : stored;
  if (wait.jobs !== undefined) return { jobs: wait.jobs };
  const until = wait.until ? new Date(wait.until) : null;
  return wait.event === undefined ? { until: until! } : { event: wait.event, until };
}

/** A stored step as `JobInfo.steps` gives it. */
export function stepInfo({ name, state, startedAt, endedAt, error }: StoredStep): JobStepInfo {
  return {
    name,
    state,
    startedAt: new Date(startedAt),
    endedAt: endedAt === null ? null : new Date(endedAt),
    ...(error === null ? {} : { error }),
  };
}
