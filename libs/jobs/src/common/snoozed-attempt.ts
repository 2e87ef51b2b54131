import { recordedAttempt } from './recorded-attempt.js';

/**
 * SQL, for the writes that end an attempt without consuming it (`ctx.snooze`; a durable step's
 * suspension): the CTE `snoozed`, which records the active attempt of job $1 (attempt $2, claim
 * `claim`) as `snoozed` and returns its history row, fenced like every ending; and what queues
 * its job again from that row, with the retries it had (the next attempt has the same number),
 * created by `createdBy`. The next claim overwrites that row, so the CTE after it keeps the
 * attempt in `jobAttempt` (`snoozed`, no error: the row's is an earlier attempt's). `s` is the
 * quoted schema.
 */
export const snoozedAttempt = (s: string, claim: string): string => `snoozed AS (
        UPDATE ${s}."jobHistory"
        SET state = 'snoozed', snoozes = snoozes + 1, "completedAt" = now(), "updatedAt" = now()
        WHERE id = $1 AND attempt = $2 AND "claimToken" = ${claim} AND state = 'active'
        RETURNING *
      ), ${recordedAttempt(s, { name: '"snoozeRecorded"', ended: 'snoozed', outcome: 'snoozed', error: 'NULL::text' })}`;

/** The columns of `jobs` a snoozed attempt's job is queued again with, `"waitUntil"` fifth. */
export const SNOOZED_JOB_COLUMNS = `id, task, payload, priority, "waitUntil", retries, "maxRetries",
                             "isScheduled", awaited, "createdBy", "createdAt", "traceContext", queue,
                             "groupKey", "inFlow"`;

/** Their values from the row of `snoozed`, with `waitUntil` and `createdBy` (SQL expressions). */
export const snoozedJobValues = (waitUntil: string, createdBy: string): string =>
  `id, task, payload, priority, ${waitUntil}, attempt - 1, "maxRetries", "wasScheduled", awaited,
             ${createdBy}, "createdAt", "traceContext", queue, "groupKey", "inFlow"`;
