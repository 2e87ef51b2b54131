import type { SchemaName } from '../database/schema-name.js';

/** The registration a running instance holds in the instances table. */
export interface InstanceRegistration {
  /**
   * Database time of this life's registration: jobs that started before it belong to an earlier
   * life. Kept as text, since a JavaScript `Date` would drop the microseconds it is compared at.
   */
  readonly startedAt: string;
}

/** The instance registry's statements. Every time in them is database time. */
export function instancesSql({ quoted: s }: SchemaName) {
  return {
    /** The instance id's advisory lock, per schema. $1 schema name $2 id */
    lockIdentity: `SELECT pg_try_advisory_lock(hashtextextended('nestjs-pg-jobs:instance:' || $1 || ':' || $2, 0)) AS held`,

    /**
     * Who holds the id, as far as the table knows: only a row whose heartbeat is within its
     * `instanceTimeout` can belong to a live instance. $1 id
     */
    liveHolder: `
      SELECT hostname, pid, extract(epoch FROM now() - "heartbeatAt")::float8 AS "silentFor",
             "heartbeatAt"::text AS "heartbeatAt"
      FROM ${s}.instances
      WHERE id = $1 AND "heartbeatAt" >= now() - make_interval(secs => "instanceTimeout")`,

    /**
     * Starts a life of the instance: a new row, or a fresh `startedAt` on the row an earlier life
     * with the same id left behind. Jobs that earlier life left `active` started before this
     * `startedAt`, which is how the reaper knows they are orphans although the id is alive.
     *
     * With $5 (no lock vouches for the id: behind a transaction pooler) a row whose heartbeat is
     * still within its `instanceTimeout` is left alone and nothing is returned: the look at the
     * row and the taking of it are one statement, so two instances booting under one id at once
     * cannot both take it.
     *
     * $1 id $2 hostname $3 pid $4 instanceTimeout $5 only if no live instance has the row
     * $6 concurrency (0: runs no jobs)
     */
    register: `
      INSERT INTO ${s}.instances AS i (id, hostname, pid, "instanceTimeout", concurrency)
      VALUES ($1, $2, $3, $4, $6)
      ON CONFLICT (id) DO UPDATE SET hostname = EXCLUDED.hostname, pid = EXCLUDED.pid,
        "instanceTimeout" = EXCLUDED."instanceTimeout", concurrency = EXCLUDED.concurrency,
        "startedAt" = now(), "heartbeatAt" = now()
      WHERE NOT $5::boolean OR i."heartbeatAt" < now() - make_interval(secs => i."instanceTimeout")
      RETURNING "startedAt"::text AS "startedAt"`,

    /**
     * Heartbeats, and says how long the instance had been silent (null: its row was gone, because a
     * reaper presumed it dead). The row is put back with this life's `startedAt`, so jobs claimed
     * in this life are never taken for an earlier life's.
     *
     * $1 id $2 hostname $3 pid $4 startedAt $5 instanceTimeout $6 concurrency
     */
    heartbeat: `
      WITH previous AS (SELECT "heartbeatAt" FROM ${s}.instances WHERE id = $1)
      INSERT INTO ${s}.instances (id, hostname, pid, "startedAt", "instanceTimeout", concurrency)
      VALUES ($1, $2, $3, $4::timestamptz, $5, $6)
      ON CONFLICT (id) DO UPDATE SET "heartbeatAt" = now()
      RETURNING (SELECT extract(epoch FROM now() - "heartbeatAt")::float8 FROM previous) AS "silentFor"`,

    /** Only this life's row: a successor that registered under the same id keeps its own. $1 id $2 startedAt */
    deregister: `DELETE FROM ${s}.instances WHERE id = $1 AND "startedAt" = $2::timestamptz`,
  };
}
