import type { EntityManager } from 'typeorm';
import { serialiseJson } from '../common/json-payload.js';
import type { JobContext } from '../discovery/job-task.interfaces.js';
import { InvalidContextArgumentError, JobSnooze } from '../errors/jobs.errors.js';
import type { JobDependencies } from '../discovery/job-task.interfaces.js';
import type { JobOutcome } from '../steps/step-info.interface.js';
import type { StepMemo } from '../steps/step-memo.js';
import { assertSeconds } from '../steps/step-names.js';
import type { AttemptJob } from './attempt-job.js';

/**
 * The most bytes of JSON one progress value may take: it is written to the job at every report
 * that is not coalesced away, and read by every listener of `progress` events.
 */
export const MAX_PROGRESS_BYTES = 16_384;

/** What a context needs from where its task runs (in-process, or in a pool thread). */
export interface ContextSources {
  /** The attempt's signal, asked for only when the task reads `ctx.signal`. */
  signal(): AbortSignal;
  /** Hears each valid `ctx.reportProgress` value, as JSON. */
  progress(json: string): void;
  /** The job's direct dependencies (a flow job's; `{}` otherwise). */
  dependencies(): Promise<JobDependencies>;
  /** The attempt's durable steps, made on first use. */
  steps(): StepMemo;
  readonly manager?: EntityManager;
}

/**
 * The `JobContext` of one attempt: the same API wherever the task runs.
 *
 * An instance of a class, whose getter and methods live on its prototype: the context holds no
 * accessor and no closure of its own. An object literal with a getter (`get signal()`) costs each
 * attempt an accessor pair that V8 allocates in the old generation, pointing at that attempt's
 * getter closure; every young object the closure reaches (the context, its sources, the attempt's
 * frames and promises) then survives each scavenge until the next full collection, promoted to the
 * old generation with every attempt (see "Memory" in docs/performance.md).
 */
export function createJobContext(job: AttemptJob, sources: ContextSources): JobContext {
  return new AttemptContext(job, sources);
}

class AttemptContext implements JobContext {
  readonly id: string;
  readonly task: string;
  readonly attempt: number;
  readonly maxRetries: number;
  readonly manager?: EntityManager;
  readonly #sources: ContextSources;
  #reportProgress?: JobContext['reportProgress'];

  constructor(job: AttemptJob, sources: ContextSources) {
    this.id = job.id;
    this.task = job.task;
    this.attempt = job.attempt;
    this.maxRetries = job.maxRetries;
    this.manager = sources.manager;
    this.#sources = sources;
  }

  get signal(): AbortSignal {
    return this.#sources.signal();
  }

  /**
   * A function of its own, made on first use, so that it works taken out of the context
   * (`run(payload, { reportProgress })`) as `signal` and `snooze` do; an attempt that never reports
   * progress allocates none.
   */
  get reportProgress(): JobContext['reportProgress'] {
    return (this.#reportProgress ??= (value) => this.#sources.progress(encodeProgress(value)));
  }

  dependencies(): Promise<JobDependencies> {
    return this.#sources.dependencies();
  }

  /** Needs no `this`: it works taken out of the context too. */
  snooze(seconds: number): JobSnooze {
    return snooze(seconds);
  }

  step<T>(name: string, run: () => T | Promise<T>): Promise<T> {
    return this.#sources.steps().step(name, run);
  }

  sleep(name: string, seconds: number): Promise<void> {
    return this.#sources.steps().sleep(name, seconds);
  }

  waitForEvent<T = unknown>(event: string, options?: { timeout?: number }): Promise<T | null> {
    return this.#sources.steps().waitForEvent<T>(event, options);
  }

  waitForJobs(ids: readonly string[]): Promise<Record<string, JobOutcome>> {
    return this.#sources.steps().waitForJobs(ids);
  }
}

function snooze(seconds: number): JobSnooze {
  assertSeconds('snooze', seconds);
  return new JobSnooze(seconds);
}

/** A progress value as the JSON that is written, or the error saying what it must be instead. */
function encodeProgress(value: unknown): string {
  if (typeof value === 'number') {
    if (value >= 0 && value <= 100) return String(value);
  } else if (
    value !== null &&
    typeof value === 'object' &&
    [Object.prototype, null].includes(Object.getPrototypeOf(value))
  ) {
    const json = serialiseJson(
      value,
      (path, reason) =>
        new InvalidContextArgumentError(
          'reportProgress',
          value,
          `takes JSON, but ${path} ${reason}`,
        ),
    );
    const bytes = Buffer.byteLength(json);
    if (bytes <= MAX_PROGRESS_BYTES) return json;
    throw new InvalidContextArgumentError(
      'reportProgress',
      `${bytes} bytes of JSON`,
      `takes at most ${MAX_PROGRESS_BYTES} bytes of JSON`,
    );
  }
  throw new InvalidContextArgumentError(
    'reportProgress',
    value,
    'takes a number from 0 to 100 or a plain JSON object',
  );
}
