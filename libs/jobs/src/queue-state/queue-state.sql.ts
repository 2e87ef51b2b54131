import type { SchemaName } from '../database/schema-name.js';

/** The statements of queues' persisted state (the `queues` table) and of their counts. */
export function queuesSql({ quoted: s }: SchemaName) {
  return {
    /**
     * Pauses ($2 true) or resumes queue $1 and tells every instance in the same statement: the
     * notification goes out when the change commits, never for a change that did not.
     *
     * $1 queue $2 paused $3 channel
     */
    setPaused: `
      WITH changed AS (
        INSERT INTO ${s}.queues (name, paused) VALUES ($1, $2)
        ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused, "updatedAt" = now()
        RETURNING name, paused
      )
      SELECT name, pg_notify($3, json_build_object('event', 'queuePaused', 'queue', name,
                                                   'paused', paused)::text)
      FROM changed`,

    /**
     * Creates the rows of the queues this instance configures, in their configured state, and
     * leaves existing rows alone: the option `paused` is where a queue starts, not an order
     * repeated at every boot. $1 name[] $2 paused[]
     */
    declare: `
      INSERT INTO ${s}.queues (name, paused)
      SELECT * FROM unnest($1::text[], $2::bool[])
      ON CONFLICT (name) DO NOTHING`,

    paused: `SELECT name FROM ${s}.queues WHERE paused`,

    /**
     * The counts behind `getQueues()`, in one snapshot: queued (pending, or blocked in a flow) and
     * due jobs by task and the queue they were enqueued under (the caller files them under their
     * task's queue where it knows the task), running ones by the queue their claim recorded, and
     * the stored states.
     */
    counts: `
      SELECT
        (SELECT coalesce(json_agg(q), '[]') FROM (
           SELECT task, queue, count(*) FILTER (WHERE COALESCE("blockedBy", 0) = 0)::int AS pending,
                  count(*) FILTER (WHERE "blockedBy" > 0)::int AS blocked,
                  count(*) FILTER (WHERE "waitUntil" <= now())::int AS due
           FROM ${s}.jobs GROUP BY task, queue) q) AS queued,
        (SELECT coalesce(json_agg(r), '[]') FROM (
           SELECT queue, count(*)::int AS active
           FROM ${s}."jobHistory" WHERE state = 'active' GROUP BY queue) r) AS running,
        (SELECT coalesce(json_agg(t), '[]') FROM (SELECT name, paused FROM ${s}.queues) t) AS stored`,
  };
}

export type QueuesSql = ReturnType<typeof queuesSql>;
