/**
 * How an attempt that did not complete ended, as the job's attempt log keeps it: it `failed` (its
 * task threw or timed out, with a retry left or not, or gave up: `backoff` said `'giveUp'`, an
 * `UnrecoverableJobError`), was `interrupted` (the reaper rescued it from a dead or stuck
 * instance, or shutdown gave it back unfinished), `snoozed` (`ctx.snooze`, or a durable step's
 * `ctx.sleep` or wait), or was `cancelled` while it ran. An interrupted or snoozed attempt does not
 * consume its number: the attempt after it has the same one.
 *
 * @publicApi
 */
export type AttemptOutcome = 'failed' | 'interrupted' | 'snoozed' | 'cancelled';

/**
 * SQL, for the statements that end an attempt without completing it: a CTE named `name` that keeps
 * the attempts of `ended` (a CTE returning the history rows those statements just wrote) in
 * `jobAttempt`, as `outcome`, ended now (the time the ending wrote), with `error` and `stack` (SQL
 * expressions over those rows). Inside the ending's statement, so behind its fence: a stale or
 * repeated ending returns no row here and records nothing. The conflict clause only keeps that a
 * rule (one row per start of an attempt). `s` is the quoted schema.
 */
export const recordedAttempt = (
  s: string,
  {
    name,
    ended,
    outcome,
    error = '"lastErrorMessage"',
    stack = 'NULL::text',
  }: {
    name: string;
    ended: string;
    outcome: AttemptOutcome;
    error?: string;
    stack?: string;
  },
): string => `${name} AS (
        INSERT INTO ${s}."jobAttempt" ("jobId", "startedAt", attempt, outcome, "executedBy", "endedAt",
                                      error, stack)
        SELECT id, "startedAt", attempt, '${outcome}', "executedBy", now(), ${error}, ${stack}
        FROM ${ended} WHERE "startedAt" IS NOT NULL
        ON CONFLICT DO NOTHING
      )`;
