import { queuedJobState } from '../common/job-states.js';
import { sqlStatement } from '../database/sql-statement.js';
import type { SchemaName } from '../database/schema-name.js';
import type { TraceCarrier } from '../telemetry/jobs-telemetry.js';
import type { ValidatedFlow } from './validate-flow.js';

/**
 * A flow job's state, on its queued row `j` (NULL when it has none) and its history row `h`:
 * `blocked` while dependencies have not ended, else where it is.
 */
export const flowJobState = `CASE WHEN j.id IS NULL THEN h.state ELSE ${queuedJobState('j')} END`;

/**
 * The flows' statements. A flow is its `jobFlow` row, one `jobFlowMember` row per job (its ref,
 * the refs it depends on, its policy) and one `jobDependency` row per dependency; its jobs are
 * ordinary jobs marked "inFlow", in the queue and then in history. What unblocks or cancels a
 * dependent when a job ends is the `flowJobEnded` trigger (migration 14), inside the statement that
 * wrote the ending.
 */
export function flowsSql({ quoted: s }: SchemaName) {
  return {
    /**
     * Inserts a flow, its jobs and their dependencies in one statement (so one transaction: all or
     * nothing), and notifies `newJob` when a job is due now. A job with dependencies is queued
     * blocked: "blockedBy" their number and "waitUntil" 'infinity', out of every claim's reach until
     * its last dependency's ending makes it due at its own "waitUntil" (kept in "blockedWaitUntil").
     */
    insertFlow: sqlStatement(
      `
      WITH flow AS (
        INSERT INTO ${s}."jobFlow" (id, name, "createdBy") VALUES ($1, $2, $3)
      ), input AS (
        SELECT * FROM unnest($4::uuid[], $5::text[], $6::jsonb[], $7::int[], $8::timestamptz[],
                             $9::int[], $10::bool[], $11::text[], $12::text[], $13::text[], $14::text[],
                             $15::int[])
          WITH ORDINALITY AS t(id, task, payload, priority, "waitUntil", "maxRetries", "isScheduled",
                               queue, "groupKey", ref, "onDependencyFailure", "blockedBy", position)
      ), members AS (
        INSERT INTO ${s}."jobFlowMember" ("jobId", "flowId", ref, "dependsOn", "onDependencyFailure",
                                          position)
        SELECT i.id, $1, i.ref, d.refs::text[], i."onDependencyFailure", i.position
        FROM input i
        JOIN (SELECT * FROM unnest($16::text[]) WITH ORDINALITY AS x(refs, position)) d
          ON d.position = i.position
      ), edges AS (
        INSERT INTO ${s}."jobDependency" ("dependsOn", "jobId")
        SELECT * FROM unnest($17::uuid[], $18::uuid[])
      ), inserted AS (
        INSERT INTO ${s}.jobs (id, task, payload, priority, "waitUntil", "maxRetries", "isScheduled",
                               awaited, "createdBy", "traceContext", queue, "groupKey", "inFlow",
                               "blockedBy", "blockedWaitUntil", "queuedAgain")
        SELECT id, task, payload, priority,
               CASE WHEN "blockedBy" > 0 THEN 'infinity' ELSE coalesce("waitUntil", now()) END,
               "maxRetries", "isScheduled", false, $3, $19::jsonb, queue, "groupKey", true,
               NULLIF("blockedBy", 0), CASE WHEN "blockedBy" > 0 THEN "waitUntil" END, false
        FROM input ORDER BY position
        RETURNING "waitUntil"
      ), woken AS (
        SELECT pg_notify($20, $21) WHERE $22 AND EXISTS (SELECT 1 FROM inserted WHERE "waitUntil" <= now())
      )
      SELECT (SELECT count(*) FROM woken)::int AS notified`,
      (p: {
        flow: ValidatedFlow;
        createdBy: string;
        traceContext: TraceCarrier | null;
        channel: string;
        notification: string;
      }) => {
        const { flow } = p;
        const idOf = new Map(flow.jobs.map(({ ref, job }) => [ref, job.id]));
        const each = <T>(value: (job: ValidatedFlow['jobs'][number]) => T) => flow.jobs.map(value);
        return [
          flow.flowId,
          flow.name,
          p.createdBy,
          each(({ job }) => job.id),
          each(({ job }) => job.task),
          each(({ job }) => job.payload),
          each(({ job }) => job.priority),
          each(({ job }) => job.waitUntil),
          each(({ job }) => job.maxRetries),
          each(({ job }) => job.isScheduled),
          each(({ job }) => job.queue),
          each(({ job }) => job.groupKey),
          each(({ ref }) => ref),
          each(({ onDependencyFailure }) => onDependencyFailure),
          each(({ dependsOn }) => dependsOn.length),
          // Each job's refs as one text[] literal: PostgreSQL has no array of arrays of any length.
          each(({ dependsOn }) => toTextArrayLiteral(dependsOn)),
          flow.jobs.flatMap(({ dependsOn }) => dependsOn.map((ref) => idOf.get(ref)!)),
          flow.jobs.flatMap(({ job, dependsOn }) => dependsOn.map(() => job.id)),
          p.traceContext,
          p.channel,
          p.notification,
          flow.notify,
        ];
      },
    ),

    /** A flow and its jobs in the order they were added, or no row. */
    getFlow: sqlStatement(
      `
      SELECT f.id AS "flowId", f.name, f."createdAt",
             json_agg(json_build_object('ref', m.ref, 'id', m."jobId", 'task', coalesce(j.task, h.task),
                                        'state', ${flowJobState}, 'dependsOn', m."dependsOn")
                      ORDER BY m.position) AS jobs
      FROM ${s}."jobFlow" f
      JOIN ${s}."jobFlowMember" m ON m."flowId" = f.id
      LEFT JOIN ${s}.jobs j ON j.id = m."jobId"
      LEFT JOIN ${s}."jobHistory" h ON h.id = m."jobId"
      WHERE f.id = $1
      GROUP BY f.id`,
      (p: { flowId: string }) => [p.flowId],
    ),

    /**
     * The direct dependencies of job $1, by ref: id, state, and a completed one's result (as JSON
     * text: SQL NULL, nothing returned, stays apart from a JSON null) or an ended one's error.
     */
    dependenciesOf: sqlStatement(
      `
      SELECT d.ref, d."jobId" AS id, ${flowJobState} AS state,
             CASE WHEN j.id IS NULL AND h.state = 'completed' THEN h.result::text END AS result,
             CASE WHEN j.id IS NULL AND h.state <> 'completed' THEN h."lastErrorMessage" END AS error
      FROM ${s}."jobFlowMember" self
      JOIN ${s}."jobFlowMember" d ON d."flowId" = self."flowId" AND d.ref = ANY(self."dependsOn")
      LEFT JOIN ${s}.jobs j ON j.id = d."jobId"
      LEFT JOIN ${s}."jobHistory" h ON h.id = d."jobId"
      WHERE self."jobId" = $1`,
      (p: { id: string }) => [p.id],
    ),

    /**
     * Queues again the jobs of flow $1 that ended without completing (failed, interrupted,
     * cancelled), each blocked by its dependencies that have not completed: those queued again
     * here, and those still queued or running. A dependency queued again counts for its dependents
     * again ("ended" unset): its next end unblocks them. A job that ran gets one more attempt, as
     * `retryJobs` gives it (its attempt counter goes on: it is the fencing token); one that never
     * ran (cancelled while blocked) gets the retries it had. The history rows are locked, as in
     * `retryJobs`, so two simultaneous retries queue each job once.
     */
    retryFlow: sqlStatement(
      `
      WITH picked AS (
        SELECT h.id, h.task, h.payload, h.priority, h.attempt, h."maxRetries", h."wasScheduled",
               h."createdAt", h.queue, h."groupKey"
        FROM ${s}."jobFlowMember" m JOIN ${s}."jobHistory" h ON h.id = m."jobId"
        WHERE m."flowId" = $1 AND h.state IN ('failed', 'interrupted', 'cancelled')
          AND NOT EXISTS (SELECT 1 FROM ${s}.jobs q WHERE q.id = h.id)
        FOR UPDATE OF h
      ), reopened AS (
        UPDATE ${s}."jobDependency" d SET ended = false
        WHERE d."dependsOn" IN (SELECT id FROM picked) AND d.ended
      ), blocking AS (
        SELECT p.id, count(d."dependsOn")::int AS n
        FROM picked p
        LEFT JOIN ${s}."jobDependency" d
          ON d."jobId" = p.id AND (NOT d.ended OR d."dependsOn" IN (SELECT id FROM picked))
        GROUP BY p.id
      ), requeued AS (
        INSERT INTO ${s}.jobs (id, task, payload, priority, "waitUntil", retries, "maxRetries",
                               "isScheduled", "createdBy", "createdAt", queue, "groupKey", "inFlow",
                               "blockedBy")
        SELECT p.id, p.task, p.payload, p.priority,
               CASE WHEN b.n > 0 THEN 'infinity'::timestamptz ELSE now() END,
               p.attempt, GREATEST(p.attempt, p."maxRetries"), p."wasScheduled", $2, p."createdAt",
               p.queue, p."groupKey", true, NULLIF(b.n, 0)
        FROM picked p JOIN blocking b ON b.id = p.id
        ON CONFLICT (id) DO NOTHING
        RETURNING id, task, queue, "waitUntil"
      ), woken AS (
        SELECT pg_notify($3, $4) WHERE EXISTS (SELECT 1 FROM requeued WHERE "waitUntil" <= now())
      )
      SELECT COALESCE((SELECT json_agg(json_build_object('id', id, 'task', task, 'queue', queue))
                       FROM requeued), '[]') AS jobs,
             (SELECT count(*) FROM woken)::int AS woken`,
      (p: { flowId: string; createdBy: string; channel: string; notification: string }) => [
        p.flowId,
        p.createdBy,
        p.channel,
        p.notification,
      ],
    ),
  };
}

export type FlowsSql = ReturnType<typeof flowsSql>;

/** `values` as a PostgreSQL text[] literal, every element quoted. */
function toTextArrayLiteral(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replace(/(["\\])/g, '\\$1')}"`).join(',')}}`;
}
