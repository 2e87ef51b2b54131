import { toError } from '../common/errors.js';
import { serialiseJson } from '../common/json-payload.js';
import { storableText } from '../common/storable-text.js';
import {
  InvalidContextArgumentError,
  JobSuspension,
  ResultTooLargeError,
  StepNotRecordedError,
} from '../errors/jobs.errors.js';
import { JOB_ID_PATTERN } from '../common/names.js';
import type { JobOutcome } from './step-info.interface.js';
import { assertSeconds, assertStepName, StepKeys } from './step-names.js';
import type { OutcomeRow, StepStore } from './step-store.js';
import type { StepFence, StepRow } from './steps.sql.js';

/** What a step's checkpoint holds, as a run finds it. */
type Checkpoint = Omit<StepRow, 'name'>;

/**
 * The durable steps of one attempt: `ctx.step`, `ctx.sleep`, `ctx.waitForEvent` and
 * `ctx.waitForJobs`. The job's
 * checkpoints are read once, at the run's first step; a finished step returns its stored value
 * without running; each step that runs writes its checkpoint in one statement, fenced by the
 * attempt's claim. A sleep or a wait not over throws a `JobSuspension`, which ends the attempt as
 * suspended (`suspension` keeps it, should the task catch it).
 */
export class StepMemo {
  private readonly keys = new StepKeys();
  private checkpoints?: Promise<{ byName: Map<string, Checkpoint>; now: number }>;
  /** The first suspension a step of this run asked for: the attempt ends with it. */
  suspension?: JobSuspension;

  constructor(
    private readonly store: StepStore,
    private readonly fence: StepFence,
    private readonly maxResultBytes: number,
  ) {}

  async step<T>(name: string, run: () => T | Promise<T>): Promise<T> {
    assertStepName('step', name);
    if (typeof run !== 'function') {
      throw new InvalidContextArgumentError(
        'step',
        run,
        'takes a function to run as its second argument',
      );
    }
    const { key, position } = this.keys.next(name);
    const found = (await this.read()).byName.get(key);
    if (found?.state === 'completed') return parseValue(found.value) as T;
    const startedAt = new Date();
    // A step that ends soon costs one write; one still running after a moment is listed as such.
    let listed: Promise<unknown> | undefined;
    const timer = setTimeout(() => {
      listed = this.write(key, position, startedAt, 'running', null).catch(() => undefined);
    }, STEP_LISTED_AFTER_MS);
    let value: T;
    try {
      value = await run();
    } catch (err) {
      clearTimeout(timer);
      await listed;
      // Recorded against the step when the attempt still holds the job; the attempt fails all the same.
      await this.write(key, position, startedAt, 'failed', null, toError(err).message).catch(
        () => undefined,
      );
      throw err;
    } finally {
      clearTimeout(timer);
    }
    // After the `running` write, if one was made: the ending must be the last word.
    await listed;
    await this.write(key, position, startedAt, 'completed', this.encode(key, value));
    return value;
  }

  async sleep(name: string, seconds: number): Promise<void> {
    assertStepName('sleep', name);
    assertSeconds('sleep', seconds);
    const { key, position } = this.keys.next(name);
    const { byName, now } = await this.read();
    const found = byName.get(key);
    if (found?.state === 'completed') return;
    if (found?.until !== undefined && found.until !== null && found.until <= now) {
      await this.write(key, position, new Date(), 'completed', null);
      return;
    }
    this.suspend(new JobSuspension(key, position, seconds));
  }

  async waitForEvent<T = unknown>(
    event: string,
    options: { timeout?: number } = {},
  ): Promise<T | null> {
    assertStepName('waitForEvent', event);
    const timeout = options?.timeout;
    if (timeout !== undefined) assertSeconds('waitForEvent', timeout);
    // `#` starts no name of the task's own (`assertStepName`): the wait's key never meets a step's.
    const { key, position } = this.keys.next(`#event:${event}`);
    const { byName, now } = await this.read();
    const found = byName.get(key);
    if (found?.state === 'completed') return parseEvent(found.value) as T | null;
    const sent = await this.store.findEvent(event);
    if (sent) {
      await this.write(key, position, new Date(), 'completed', sent.payload);
      return parseEvent(sent.payload) as T | null;
    }
    if (found?.until !== undefined && found.until !== null && found.until <= now) {
      await this.write(key, position, new Date(), 'completed', null);
      return null;
    }
    this.suspend(new JobSuspension(key, position, timeout ?? null, event));
  }

  async waitForJobs(ids: readonly string[]): Promise<Record<string, JobOutcome>> {
    if (
      !Array.isArray(ids) ||
      ids.length === 0 ||
      ids.length > MAX_WAITED_JOBS ||
      !ids.every((id) => typeof id === 'string' && JOB_ID_PATTERN.test(id))
    ) {
      throw new InvalidContextArgumentError(
        'waitForJobs',
        ids,
        `takes an array of 1 to ${MAX_WAITED_JOBS} job ids`,
      );
    }
    const { key, position } = this.keys.next('#jobs');
    const found = (await this.read()).byName.get(key);
    if (found?.state === 'completed') return parseValue(found.value) as Record<string, JobOutcome>;
    const rows = await this.store.jobOutcomes(ids);
    const outcomes: Record<string, JobOutcome> = {};
    const unended: string[] = [];
    for (const row of rows) {
      if (!row.queued && row.state === null) {
        throw new InvalidContextArgumentError(
          'waitForJobs',
          row.id,
          'takes ids of jobs that exist',
        );
      }
      if (row.queued || !ENDED.has(row.state!)) unended.push(row.id);
      else outcomes[row.id] = outcomeOf(row);
    }
    if (unended.length === 0) {
      await this.write(key, position, new Date(), 'completed', JSON.stringify(outcomes));
      return outcomes;
    }
    this.suspend(new JobSuspension(key, position, WAIT_FOR_JOBS_RECHECK, undefined, unended));
  }

  private suspend(suspension: JobSuspension): never {
    this.suspension ??= suspension;
    throw suspension;
  }

  private read() {
    this.checkpoints ??= this.store.load(this.fence).then(({ rows, now }) => ({
      byName: new Map(rows.map(({ name, ...row }) => [name, row])),
      now,
    }));
    return this.checkpoints;
  }

  private async write(
    name: string,
    position: number,
    startedAt: Date,
    state: 'running' | 'completed' | 'failed',
    value: string | null,
    error: string | null = null,
  ): Promise<void> {
    const written = await this.store.write(this.fence, {
      name,
      position,
      state,
      value,
      error: error === null ? null : storableText(error),
      startedAt,
    });
    if (!written) throw new StepNotRecordedError(this.fence.id, name);
  }

  /** A step's value as JSON text (`null` for nothing), under the rules of a job's result. */
  private encode(key: string, value: unknown): string | null {
    if (value === undefined) return null;
    const json = serialiseJson(
      value,
      (path, reason) =>
        new InvalidContextArgumentError(
          'step',
          value,
          `(step "${key}") must return JSON, but ${path} ${reason}`,
        ),
    );
    const bytes = Buffer.byteLength(json);
    if (bytes > this.maxResultBytes) throw new ResultTooLargeError(bytes, this.maxResultBytes);
    return json;
  }
}

/**
 * How long a step runs before `getJob` lists it `running`: a step that ends sooner is written once,
 * when it ends.
 */
const STEP_LISTED_AFTER_MS = 1_000;

/** The most jobs one `ctx.waitForJobs` waits for: as many as one `addFlow` adds. */
const MAX_WAITED_JOBS = 10_000;

/**
 * Seconds after which a job waiting for jobs runs again to look, whatever it was told: the endings
 * of flow jobs wake it at once, those of other jobs (whose endings count nothing) only then.
 */
const WAIT_FOR_JOBS_RECHECK = 30;

/** The endings `ctx.waitForJobs` waits for. */
const ENDED = new Set(['completed', 'failed', 'interrupted', 'cancelled', 'skipped']);

function outcomeOf({ state, result, error }: OutcomeRow): JobOutcome {
  if (state === 'completed') {
    return result === null ? { state } : { state, result: JSON.parse(result) as unknown };
  }
  return { state: state as JobOutcome['state'], ...(error === null ? {} : { error }) };
}

/** A step's stored value: `undefined` for a step that returned nothing. */
function parseValue(json: string | null): unknown {
  return json === null ? undefined : JSON.parse(json);
}

/** An event wait's stored value: the event's payload, `null` for a timeout or an event without one. */
function parseEvent(json: string | null): unknown {
  return json === null ? null : JSON.parse(json);
}
