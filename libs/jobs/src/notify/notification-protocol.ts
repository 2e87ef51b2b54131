import type { SchemaName } from '../database/schema-name.js';

/**
 * What instances tell each other over `NOTIFY`. Ids and states only, never a payload: a
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
  /** A queue was paused or resumed: every instance applies it to its claims at once. */
  | { readonly event: 'queuePaused'; readonly queue: string; readonly paused: boolean };

/** One channel per schema, so two apps sharing a database do not wake each other. */
export function channelFor(schema: SchemaName): string {
  return `${schema.name}_scheduler`;
}

export const NEW_JOB_NOTIFICATION = JSON.stringify({ event: 'newJob' } satisfies JobsNotification);

export function parseNotification(payload: string | undefined): JobsNotification | undefined {
  if (!payload) return undefined;
  try {
    const value = JSON.parse(payload) as Partial<JobsNotification>;
    if (value?.event === 'newJob' || value?.event === 'jobCompleted') {
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
