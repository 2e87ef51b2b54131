import { truncateUtf8 } from '../common/storable-text.js';
import type { SchemaName } from '../database/schema-name.js';

/**
 * What instances tell each other over `NOTIFY`. Ids and states, never a payload nor a result: a
 * notification must stay under 8000 bytes, and anything listening on the channel can read it.
 */
export type JobsNotification =
  | { readonly event: 'newJob' }
  | {
      readonly event: 'jobCompleted';
      readonly id: string;
      readonly state: 'completed' | 'failed' | 'interrupted' | 'cancelled';
      readonly error?: string | null;
    }
  | {
      /**
       * A cancel ended this running attempt in the database: whichever instance runs it aborts it.
       * The ending is written already; the instance running the attempt writes none of its own.
       */
      readonly event: 'cancelJob';
      readonly id: string;
      /** The claim of the attempt (see `ClaimedJob.claim`), as text. */
      readonly claim: string;
    }
  /** A queue was paused or resumed: every instance applies it to its claims at once. */
  | { readonly event: 'queuePaused'; readonly queue: string; readonly paused: boolean }
  | ProgressNotification;

/**
 * An attempt's progress was written by `instance`. The value comes along only when it is at most
 * `NOTIFIED_PROGRESS_BYTES` of JSON; without it, listeners read it from history.
 */
export interface ProgressNotification {
  readonly event: 'progress';
  readonly id: string;
  readonly task: string;
  readonly queue: string;
  readonly attempt: number;
  readonly instance: string;
  readonly progress?: unknown;
}

/** The largest progress value, in bytes of JSON, that travels in its notification. */
export const NOTIFIED_PROGRESS_BYTES = 1024;

/** The notification of an attempt's progress, `json` being its value as written. */
export function progressNotification(
  job: {
    readonly id: string;
    readonly task: string;
    readonly queue: string;
    readonly attempt: number;
  },
  instance: string,
  json: string,
): string {
  const small =
    json.length * 3 <= NOTIFIED_PROGRESS_BYTES ||
    Buffer.byteLength(json) <= NOTIFIED_PROGRESS_BYTES;
  const head = JSON.stringify({
    event: 'progress',
    id: job.id,
    task: job.task,
    queue: job.queue,
    attempt: job.attempt,
    instance,
  } satisfies ProgressNotification);
  // The value is JSON already: spliced in, not parsed and serialised again.
  return small ? `${head.slice(0, -1)},"progress":${json}}` : head;
}

/**
 * The most bytes of JSON an error takes in a job's end notification: with the rest of it, well
 * under the 8000 bytes PostgreSQL allows. The full message is in history.
 */
export const NOTIFIED_ERROR_BYTES = 4000;

/**
 * The notification of job `id`'s end, in `state`, with `error` cut (between characters) so that
 * its JSON, escapes included, takes at most `NOTIFIED_ERROR_BYTES`.
 */
export function endNotification(id: string, state: 'failed', error: string): string {
  let cut = truncateUtf8(error, NOTIFIED_ERROR_BYTES);
  // Escapes make JSON longer than its text (six bytes for a control character): cut again, in
  // proportion, until it fits. Each round cuts more, and an empty string fits.
  for (let json = JSON.stringify(cut); Buffer.byteLength(json) > NOTIFIED_ERROR_BYTES;) {
    const bytes = Buffer.byteLength(cut);
    cut = truncateUtf8(cut, Math.floor((bytes * NOTIFIED_ERROR_BYTES) / Buffer.byteLength(json)));
    json = JSON.stringify(cut);
  }
  return JSON.stringify({
    event: 'jobCompleted',
    id,
    state,
    error: cut,
  } satisfies JobsNotification);
}

/** One channel per schema, so two apps sharing a database do not wake each other. */
export function channelFor(schema: SchemaName): string {
  return `${schema.name}_scheduler`;
}

export const NEW_JOB_NOTIFICATION = JSON.stringify({ event: 'newJob' } satisfies JobsNotification);

export function parseNotification(payload: string | undefined): JobsNotification | undefined {
  if (!payload) return undefined;
  try {
    const value = JSON.parse(payload) as Partial<JobsNotification>;
    if (
      value?.event === 'newJob' ||
      value?.event === 'jobCompleted' ||
      value?.event === 'cancelJob' ||
      value?.event === 'progress'
    ) {
      return value as JobsNotification;
    }
    if (
      value?.event === 'queuePaused' &&
      typeof value.queue === 'string' &&
      typeof value.paused === 'boolean'
    ) {
      return value as JobsNotification;
    }
  } catch {
    // Not ours: anything may NOTIFY on a channel.
  }
  return undefined;
}
