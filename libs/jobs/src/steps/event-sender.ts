import { serialiseJson } from '../common/json-payload.js';
import type { JobsDatabase } from '../database/jobs-database.js';
import { InvalidEventError } from '../errors/jobs.errors.js';
import { MAX_STEP_NAME_LENGTH } from './step-names.js';
import type { StepsSql } from './steps.sql.js';

/**
 * `JobQueueService.sendEvent`: records an event (the first of its name wins) and makes the jobs
 * suspended on it due at once, under the event's lock, which a job suspending on it takes too
 * (`AttemptEndingWriter`): whichever comes second sees the other.
 */
export class EventSender {
  constructor(
    private readonly db: JobsDatabase,
    private readonly sql: StepsSql,
    private readonly channel: string,
    /** The most bytes of JSON a payload may take: `maxResultBytes`, as a step's value. */
    private readonly maxPayloadBytes: number,
  ) {}

  /** Throws `InvalidEventError` for a bad name or payload; resolves `true` if it was the first. */
  async send(name: string, payload: unknown): Promise<boolean> {
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_STEP_NAME_LENGTH) {
      throw new InvalidEventError(
        name,
        `takes a name: a non-empty string of at most ${MAX_STEP_NAME_LENGTH} characters`,
      );
    }
    const json =
      payload === undefined
        ? null
        : serialiseJson(
            payload,
            (path, reason) =>
              new InvalidEventError(payload, `takes a JSON payload, but ${path} ${reason}`),
          );
    if (json !== null && Buffer.byteLength(json) > this.maxPayloadBytes) {
      throw new InvalidEventError(
        `${Buffer.byteLength(json)} bytes of JSON`,
        `takes a payload of at most maxResultBytes (${this.maxPayloadBytes}) bytes of JSON`,
      );
    }
    const { eventLock, sendEvent } = this.sql;
    return this.db.transaction(async (client) => {
      await client.query(eventLock, [name]);
      const { rows } = await client.query<{ first: boolean }>(
        sendEvent.text,
        sendEvent.values({ name, payload: json, channel: this.channel }),
      );
      return rows[0].first;
    });
  }
}
