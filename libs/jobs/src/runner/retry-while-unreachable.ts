import type { Logger } from '@nestjs/common';
import { toError } from '../common/errors.js';
import { isConnectionError } from '../database/connection-errors.js';

const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 2_000;

/** What a write came to. A class, not an object literal: see "Memory" in docs/performance.md. */
export class RetryOutcome<T> {
  constructor(
    readonly value: T,
    /** An earlier try lost its connection: it may have committed before the answer was lost. */
    readonly retried: boolean,
  ) {}
}

/**
 * Runs `write` until it gets an answer from the database, retrying with backoff while the database
 * cannot be reached, so that an attempt's result survives a restart or a dropped connection. Any
 * other error is thrown at once, and so is the last connection error once `giveUp()` says so.
 *
 * Only for fenced writes: a try that committed but lost its answer is then harmless to repeat.
 */
export async function retryWhileUnreachable<T>(
  what: string,
  write: () => Promise<T>,
  giveUp: () => boolean,
  logger: Logger,
): Promise<RetryOutcome<T>> {
  let delay = FIRST_DELAY_MS;
  for (let tries = 1; ; tries++) {
    try {
      const value = await write();
      if (tries > 1) logger.log(`Recorded ${what} after ${tries} tries.`);
      return new RetryOutcome(value, tries > 1);
    } catch (err) {
      if (!isConnectionError(err) || giveUp()) throw err;
      if (tries === 1) {
        logger.warn(
          `Cannot reach the database to record ${what} (${toError(err).message}); retrying.`,
        );
      }
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, MAX_DELAY_MS);
  }
}
