import { assertOptionsObject } from '../common/assert-options-object.js';
import { newJobId } from '../common/job-id.js';
import { unstorableReason } from '../common/storable-text.js';
import { InvalidFlowError, JobsError } from '../errors/jobs.errors.js';
import { validateJob } from './validate-job.js';
import type { JobDefaults, ValidatedJob } from './validate-job.js';
import type {
  AddFlowOptions,
  DependencyFailurePolicy,
  FlowJobOptions,
} from './flow-options.interface.js';

/** The most jobs one `addFlow` takes: one statement, its arrays and its locks stay bounded. */
export const MAX_FLOW_JOBS = 10_000;

/** A flow's name and a ref are labels, shown and compared: kept short. */
const MAX_LABEL = 200;

/** A flow job that passed every check. */
export interface ValidatedFlowJob {
  readonly ref: string;
  readonly job: ValidatedJob;
  /** The refs it waits for, each once. */
  readonly dependsOn: readonly string[];
  readonly onDependencyFailure: DependencyFailurePolicy;
}

/** A flow that passed every check, its ids made, ready for the insert. */
export interface ValidatedFlow {
  readonly flowId: string;
  readonly name: string | null;
  readonly jobs: readonly ValidatedFlowJob[];
  readonly notify: boolean;
}

const FLOW_KEYS = new Set(['name', 'jobs', 'manager', 'notify']);
const FLOW_JOB_FIELDS = new Set(['ref', 'dependsOn', 'onDependencyFailure']);
const REFUSED_JOB_OPTIONS: Record<string, string> = {
  manager: "is the flow's option, not a job's",
  notify: "is the flow's option, not a job's",
  promise: 'is not taken by a flow job: await it with waitForJob',
  uniqueKey:
    'is not taken by a flow job: a key is free again once its job starts, so it could not keep a flow from being added twice',
};

/**
 * Every check of an `addFlow` argument, before anything touches the database: each job as
 * `addJob` checks it, refs unique, every dependency a ref of the flow, no cycle.
 */
export function validateFlow(options: AddFlowOptions, defaults: JobDefaults): ValidatedFlow {
  assertOptionsObject(
    options,
    FLOW_KEYS,
    (option, value, expectation) =>
      new InvalidFlowError(null, `option "${option}" ${expectation}; got ${String(value)}`),
  );
  const { name, jobs, notify } = options;
  if (name !== undefined) assertLabel(null, 'name', name);
  if (notify !== undefined && typeof notify !== 'boolean') {
    throw new InvalidFlowError(null, 'option "notify" must be a boolean');
  }
  if (!Array.isArray(jobs) || jobs.length === 0 || jobs.length > MAX_FLOW_JOBS) {
    throw new InvalidFlowError(
      null,
      `option "jobs" must be an array of 1 to ${MAX_FLOW_JOBS} jobs; got ${
        Array.isArray(jobs) ? `${jobs.length} jobs` : typeof jobs
      }`,
    );
  }
  const byRef = new Map<string, ValidatedFlowJob>();
  for (const [index, options] of jobs.entries()) {
    const flowJob = validateFlowJob(options, index, defaults);
    if (byRef.has(flowJob.ref)) throw new InvalidFlowError(flowJob.ref, 'the ref is used twice');
    byRef.set(flowJob.ref, flowJob);
  }
  for (const flowJob of byRef.values()) {
    for (const dependency of flowJob.dependsOn) {
      if (!byRef.has(dependency)) {
        throw new InvalidFlowError(
          flowJob.ref,
          `depends on "${dependency}", which is no ref of the flow`,
        );
      }
    }
  }
  assertAcyclic(byRef);
  return {
    flowId: newJobId(),
    name: name ?? null,
    jobs: [...byRef.values()],
    notify: notify ?? true,
  };
}

function validateFlowJob(
  options: FlowJobOptions,
  index: number,
  defaults: JobDefaults,
): ValidatedFlowJob {
  if (options === null || typeof options !== 'object') {
    throw new InvalidFlowError(null, `jobs[${index}] must be an object`);
  }
  const { ref, dependsOn = [], onDependencyFailure = 'cancel' } = options;
  assertLabel(null, `jobs[${index}].ref`, ref);
  for (const [option, reason] of Object.entries(REFUSED_JOB_OPTIONS)) {
    if (option in options) throw new InvalidFlowError(ref, `option "${option}" ${reason}`);
  }
  if (!Array.isArray(dependsOn) || !dependsOn.every((dep) => typeof dep === 'string')) {
    throw new InvalidFlowError(ref, 'option "dependsOn" must be an array of refs');
  }
  if (dependsOn.includes(ref)) throw new InvalidFlowError(ref, 'depends on itself');
  if (onDependencyFailure !== 'cancel' && onDependencyFailure !== 'run') {
    throw new InvalidFlowError(
      ref,
      `option "onDependencyFailure" must be 'cancel' or 'run'; got ${String(onDependencyFailure)}`,
    );
  }
  const jobOptions = Object.fromEntries(
    Object.entries(options).filter(([key]) => !FLOW_JOB_FIELDS.has(key)),
  ) as Parameters<typeof validateJob>[0];
  let job: ValidatedJob;
  try {
    job = validateJob(jobOptions, defaults);
  } catch (err) {
    if (err instanceof JobsError) throw new InvalidFlowError(ref, err.message, { cause: err });
    throw err;
  }
  return { ref, job, dependsOn: [...new Set(dependsOn)], onDependencyFailure };
}

function assertLabel(ref: string | null, option: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_LABEL) {
    throw new InvalidFlowError(
      ref,
      `option "${option}" must be a non-empty string of at most ${MAX_LABEL} characters; got ${
        typeof value === 'string' ? `${value.length} characters` : typeof value
      }`,
    );
  }
  const reason = unstorableReason(value);
  if (reason) throw new InvalidFlowError(ref, `option "${option}": ${reason}`);
}

/**
 * Throws naming a job on a cycle when the dependencies have one: the jobs left once every job
 * that can be ordered (all its dependencies ordered before it) has been are on a cycle or behind
 * one; following dependencies from any of them, among them, must come back to a job seen.
 */
function assertAcyclic(byRef: ReadonlyMap<string, ValidatedFlowJob>): void {
  const waiting = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  for (const { ref, dependsOn } of byRef.values()) {
    waiting.set(ref, dependsOn.length);
    for (const dependency of dependsOn) {
      const list = dependents.get(dependency);
      if (list) list.push(ref);
      else dependents.set(dependency, [ref]);
    }
  }
  const ready = [...waiting].filter(([, n]) => n === 0).map(([ref]) => ref);
  while (ready.length > 0) {
    const ref = ready.pop()!;
    waiting.delete(ref);
    for (const dependent of dependents.get(ref) ?? []) {
      const left = waiting.get(dependent)! - 1;
      waiting.set(dependent, left);
      if (left === 0) ready.push(dependent);
    }
  }
  if (waiting.size === 0) return;
  const path: string[] = [];
  let ref = waiting.keys().next().value as string;
  while (!path.includes(ref)) {
    path.push(ref);
    ref = byRef.get(ref)!.dependsOn.find((dependency) => waiting.has(dependency))!;
  }
  const cycle = [...path.slice(path.indexOf(ref)), ref];
  throw new InvalidFlowError(ref, `is on a dependency cycle: ${cycle.join(' -> ')}`);
}
