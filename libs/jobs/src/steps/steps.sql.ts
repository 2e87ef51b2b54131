import type { SchemaName } from '../database/schema-name.js';
import {
  SNOOZED_JOB_COLUMNS,
  snoozedAttempt,
  snoozedJobValues,
} from '../common/snoozed-attempt.js';
import { preparedStatement, sqlStatement } from '../database/sql-statement.js';

/** What fences a step's write: the attempt's job, its number and its claim. */
export interface StepFence {
  readonly id: string;
  readonly attempt: number;
  readonly claim: string;
}

/** A checkpoint as a run reads it back. */
export interface StepRow {
  readonly name: string;
  readonly state: 'running' | 'completed' | 'failed';
  /** JSON text; `null` for a step that returned nothing. */
  readonly value: string | null;
  /** A sleep's or a wait's end (epoch ms), from `value.until`; `null` for none. */
  readonly until: number | null;
}

/**
 * The statements of durable steps (migration 15): a job's checkpoints in `jobStep`, events in
 * `jobEvent`, and the jobs suspended on an event in `jobEventWait`. A suspended job is queued as a
 * snoozed one is, with its `"waitingFor"`; the statement that suspends it is the runner's
 * (`suspend`, below), fenced like every ending.
 */
export function stepsSql({ quoted: s }: SchemaName) {
  /** The advisory lock of event `$1`'s name: `sendEvent` and a wait on it never miss each other. */
  const eventLock = `SELECT pg_advisory_xact_lock(hashtextextended('nestjs-pg-jobs:event:' || $1, 0))`;
  return {
    /** Every checkpoint of job $1, and the database's clock (epoch ms), read once per run. */
    loadSteps: preparedStatement(
      `
      SELECT name, state, value::text AS value,
             extract(epoch FROM (value->>'until')::timestamptz) * 1000 AS until,
             extract(epoch FROM now()) * 1000 AS now
      FROM ${s}."jobStep" WHERE "jobId" = $1`,
      (p: { id: string }) => [p.id],
    ),

    /**
     * Writes steps' checkpoints, each if its attempt still holds its job: the steps of many jobs
     * that ended together in one round trip (`DatabaseStepStore`'s batches). Returns the job and
     * name of each one written; one fenced out returns nothing. A `running` one (a step still running
     * after `STEP_LISTED_AFTER_MS`) has no end yet. A sleep's or a wait's start is its first
     * suspension's (its `running` row holds its `until`); any other step's start is its latest
     * try's. Two writes of one step fail the statement (ON CONFLICT updates a row once): the
     * batcher then writes its entries one by one, in the order they came.
     */
    writeSteps: preparedStatement(
      `
      INSERT INTO ${s}."jobStep" AS st ("jobId", name, position, state, value, error, "startedAt",
                                       "endedAt", attempt, "claimToken")
      SELECT w.id, w.name, w.position, w.state, w.value, w.error, w."startedAt",
             CASE WHEN w.state = 'running' THEN NULL ELSE now() END, w.attempt, w.claim
      FROM unnest($1::uuid[], $2::int[], $3::bigint[], $4::text[], $5::int[], $6::text[], $7::jsonb[],
                  $8::text[], $9::timestamptz[])
             AS w(id, attempt, claim, name, position, state, value, error, "startedAt")
      WHERE EXISTS (SELECT 1 FROM ${s}."jobHistory" h
                    WHERE h.id = w.id AND h.attempt = w.attempt AND h."claimToken" = w.claim
                      AND h.state = 'active')
      ON CONFLICT ("jobId", name) DO UPDATE
        SET state = EXCLUDED.state, value = EXCLUDED.value, error = EXCLUDED.error,
            "startedAt" = CASE WHEN st.state = 'running' AND st.value IS NOT NULL THEN st."startedAt"
                               ELSE EXCLUDED."startedAt" END,
            "endedAt" = EXCLUDED."endedAt", attempt = EXCLUDED.attempt, "claimToken" = EXCLUDED."claimToken"
      RETURNING st."jobId" AS id, st.name`,
      (
        writes: readonly {
          readonly fence: StepFence;
          readonly step: {
            readonly name: string;
            readonly position: number;
            readonly state: StepRow['state'];
            readonly value: string | null;
            readonly error: string | null;
            readonly startedAt: Date;
          };
        }[],
      ) => [
        writes.map((w) => w.fence.id),
        writes.map((w) => w.fence.attempt),
        writes.map((w) => w.fence.claim),
        writes.map((w) => w.step.name),
        writes.map((w) => w.step.position),
        writes.map((w) => w.step.state),
        writes.map((w) => w.step.value),
        writes.map((w) => w.step.error),
        writes.map((w) => w.step.startedAt),
      ],
    ),

    /**
     * Where each of the jobs $1 is: queued (pending, blocked, suspended), in history (its latest
     * attempt's state, and a completed one's result or an ended one's error), or nowhere.
     */
    jobOutcomes: preparedStatement(
      `
      SELECT i.id, j.id IS NOT NULL AS queued, h.state, h.result::text AS result,
             h."lastErrorMessage" AS error
      FROM unnest($1::uuid[]) AS i(id)
      LEFT JOIN ${s}.jobs j ON j.id = i.id
      LEFT JOIN ${s}."jobHistory" h ON h.id = i.id`,
      (p: { ids: readonly string[] }) => [p.ids],
    ),

    /** The payload (JSON text) of event $1, if it was sent. */
    findEvent: preparedStatement(
      `SELECT payload::text AS payload FROM ${s}."jobEvent" WHERE name = $1`,
      (p: { name: string }) => [p.name],
    ),

    eventLock,

    /**
     * Records event $1 unless one of that name was sent (the first wins), and makes the jobs
     * suspended on it due now, notified. Run after `eventLock` in one transaction.
     */
    sendEvent: sqlStatement(
      `
      WITH sent AS (
        INSERT INTO ${s}."jobEvent" (name, payload) VALUES ($1, $2::jsonb)
        ON CONFLICT (name) DO NOTHING RETURNING name
      ), woken AS (
        DELETE FROM ${s}."jobEventWait" w WHERE w.event = $1 RETURNING w."jobId"
      ), due AS (
        UPDATE ${s}.jobs j SET "waitUntil" = now()
        WHERE j.id = ANY(ARRAY(SELECT "jobId" FROM woken)) AND j."waitingFor"->>'event' = $1
        RETURNING j.id
      ), told AS (
        SELECT pg_notify($3, '{"event":"newJob"}') WHERE EXISTS (SELECT 1 FROM due)
      )
      SELECT EXISTS (SELECT 1 FROM sent) AS first, (SELECT count(*) FROM told)::int AS told`,
      (p: { name: string; payload: string | null; channel: string }) => [
        p.name,
        p.payload,
        p.channel,
      ],
    ),

    /**
     * Ends an active attempt as suspended: history records it `snoozed` (the attempt unconsumed, as
     * a snooze does) and the job is queued again with its `"waitingFor"`, due at its step's `until`:
     * the one stored at the first suspension of that step (so a job woken early waits out the same
     * time), else now + $7 seconds, else never ('infinity': an event wait without a timeout). The
     * step is recorded `running` with that `until`; an event wait registers in `jobEventWait` and
     * is due at once if its event was sent meanwhile (the caller holds `eventLock`). A wait for
     * jobs ($9) is a flow dependent's wait on those of them that are flow jobs: one `jobDependency`
     * edge each not ended yet, counted in "blockedBy", so that their endings (`completeInFlow`,
     * the flowJobEnded trigger) make it due at once; due anyway at its `until` ($7 seconds: the
     * recheck, for the other jobs, whose endings count nothing and which get no edge, so that none
     * outlives them: a flow's edges go with the flow). Fenced like every ending: returns no row
     * when the attempt no longer holds its job.
     */
    suspend: preparedStatement(
      `
      WITH ${snoozedAttempt(s, '$3')}, due AS (
        -- A recheck of jobs is always $7 from now; a sleep's or a timeout's end stays the first one.
        SELECT COALESCE((SELECT (value->>'until')::timestamptz FROM ${s}."jobStep"
                         WHERE "jobId" = $1 AND name = $5 AND $9::uuid[] IS NULL),
                        now() + make_interval(secs => $7::float8), 'infinity') AS until
      ), step AS (
        INSERT INTO ${s}."jobStep" ("jobId", name, position, state, value, "startedAt", attempt,
                                   "claimToken")
        SELECT id, $5, $6, 'running',
               jsonb_build_object('until', CASE WHEN due.until = 'infinity' THEN NULL ELSE due.until END),
               now(), attempt, "claimToken"
        FROM snoozed, due
        ON CONFLICT ("jobId", name) DO NOTHING
      ), waiting AS (
        INSERT INTO ${s}."jobEventWait" (event, "jobId")
        SELECT $8, id FROM snoozed WHERE $8::text IS NOT NULL
        ON CONFLICT DO NOTHING
      ), unended AS (
        SELECT c.id,
               COALESCE((SELECT q."inFlow" FROM ${s}.jobs q WHERE q.id = c.id),
                        (SELECT h."inFlow" FROM ${s}."jobHistory" h
                         WHERE h.id = c.id AND h.state = 'active'), false) AS "inFlow"
        FROM unnest($9::uuid[]) AS c(id)
        WHERE EXISTS (SELECT 1 FROM ${s}.jobs q WHERE q.id = c.id)
           OR EXISTS (SELECT 1 FROM ${s}."jobHistory" h WHERE h.id = c.id AND h.state = 'active')
      ), edges AS (
        INSERT INTO ${s}."jobDependency" ("dependsOn", "jobId")
        SELECT u.id, snoozed.id FROM unended u, snoozed WHERE u."inFlow"
        ON CONFLICT ("dependsOn", "jobId") DO UPDATE SET ended = false
      )
      INSERT INTO ${s}.jobs (${SNOOZED_JOB_COLUMNS}, "waitingFor", "blockedBy")
      SELECT ${snoozedJobValues(
        `CASE WHEN EXISTS (SELECT 1 FROM ${s}."jobEvent" WHERE name = $8) THEN now()
              WHEN $9::uuid[] IS NOT NULL AND NOT EXISTS (SELECT 1 FROM unended) THEN now()
              ELSE due.until END`,
        '$4',
      )},
             CASE WHEN $9::uuid[] IS NOT NULL
                    THEN jsonb_build_object('jobs', (SELECT COALESCE(jsonb_agg(u.id), '[]') FROM unended u))
                  WHEN $8::text IS NULL THEN jsonb_build_object('until', due.until)
                  ELSE jsonb_build_object('event', $8::text, 'until',
                                          CASE WHEN due.until = 'infinity' THEN NULL ELSE due.until END)
             END,
             CASE WHEN $9::uuid[] IS NOT NULL THEN (SELECT count(*) FROM unended WHERE "inFlow")::int END
      FROM snoozed, due
      RETURNING id, "waitingFor"::text AS "waitingFor"`,
      (
        p: StepFence & {
          requeuedBy: string;
          step: string;
          position: number;
          seconds: number | null;
          event: string | null;
          jobs: readonly string[] | null;
        },
      ) => [p.id, p.attempt, p.claim, p.requeuedBy, p.step, p.position, p.seconds, p.event, p.jobs],
    ),
  };
}

export type StepsSql = ReturnType<typeof stepsSql>;
