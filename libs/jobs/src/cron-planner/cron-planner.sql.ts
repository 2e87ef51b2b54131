import type { SchemaName } from '../database/schema-name.js';
import type { ScheduleInfo } from '../cron-schedule/cron-schedule.interface.js';

/** A `jobSchedule` row as the planner reads it. */
export interface ScheduleRow extends ScheduleInfo {
  /** Bumped whenever the definition changes: a planning batch only lands on the version it expanded. */
  readonly version: number;
}

/**
 * The planner's statements. Slot de-duplication is structural: `jobScheduleSlot` has the primary
 * key `(schedule, slot)` and every planned job is inserted in the same statement as its slot row,
 * only when that row was new. The slot row, unlike the job, survives the claim (the runner deletes
 * the job from `jobs`), so a later round cannot plan an already-claimed slot again.
 */
export function cronSql({ quoted: s }: SchemaName) {
  const scheduleColumns = `name, task, cron, timezone, payload, "missedSlots", "missedSlotGrace", overlap, paused,
                           source, version, "plannedUntil", "createdAt", "updatedAt"`;
  return {
    /** Every schedule, and the database's clock: the one every instance agrees on. */
    schedulesWithNow: `
      SELECT now() AS now, s.*
      FROM (SELECT 1) AS clock
      LEFT JOIN (SELECT ${scheduleColumns} FROM ${s}."jobSchedule") AS s ON true
      ORDER BY s.name`,

    listSchedules: `SELECT ${scheduleColumns} FROM ${s}."jobSchedule" ORDER BY name`,

    /** One schedule, and the database's clock. $1 name */
    scheduleWithNow: `
      SELECT now() AS now, ${scheduleColumns} FROM ${s}."jobSchedule" WHERE name = $1`,

    /**
     * The planning-round lock of the seed, kept as an optimisation only: a round is skipped when
     * another instance finished one less than $2 seconds ago. Correctness never depends on it.
     *
     * $1 instance $2 seconds
     */
    takeRoundLock: `
      UPDATE ${s}."jobLock" SET "lastCheckedBy" = $1, "lastCheckedAt" = now()
      WHERE key = 'cron' AND "lastCheckedAt" <= now() - make_interval(secs => $2)
      RETURNING key`,

    /**
     * Plans one batch of slots, for several schedules, in one statement. The schedules are locked
     * (in name order, so concurrent planners cannot deadlock) and must still be at the version the
     * slots were expanded from: a schedule changed or removed meanwhile gets nothing, and the
     * change's own transaction, which waits on this lock, then sees and removes what was planned
     * before it. A slot another planner got first is skipped by the primary key. Due jobs (a
     * `runOnce` catch-up) wake the runners.
     *
     * Every job gets `startBy` = its slot + the schedule's grace, the deadline the claim enforces
     * (see the runner's `claim`). A `runOnce` catch-up is no exception: its deadline is already
     * past, and the claim runs it as the latest missed slot of its schedule. A job of an
     * `overlap: 'skip'` schedule carries its schedule's name, which the claim judges it by.
     *
     * $1 schedule[] $2 version[] $3 slot[] $4 jobId[] $5 maxRetries[] $6 createdBy $7 channel
     * $8 notification $9 queue[]
     */
    planSlots: `
      WITH input AS (
        SELECT * FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::uuid[], $5::int[], $9::text[])
          AS t(schedule, version, slot, "jobId", "maxRetries", queue)
      ), live AS MATERIALIZED (
        SELECT s.name, s.task, s.payload, s."missedSlotGrace", s.overlap FROM ${s}."jobSchedule" s
        WHERE (s.name, s.version) IN (SELECT DISTINCT schedule, version FROM input)
        ORDER BY s.name
        FOR UPDATE
      ), slots AS (
        INSERT INTO ${s}."jobScheduleSlot" (schedule, slot, "jobId")
        SELECT i.schedule, i.slot, i."jobId" FROM input i JOIN live l ON l.name = i.schedule
        ORDER BY i.schedule, i.slot
        ON CONFLICT (schedule, slot) DO NOTHING
        RETURNING "jobId"
      ), inserted AS (
        INSERT INTO ${s}.jobs (id, task, payload, "waitUntil", "startBy", "maxRetries", "isScheduled",
                               "overlapSchedule", "createdBy", queue, "queuedAgain")
        SELECT i."jobId", l.task, l.payload, i.slot, i.slot + make_interval(secs => l."missedSlotGrace"),
               i."maxRetries", true, CASE WHEN l.overlap = 'skip' THEN l.name END, $6, i.queue, false
        FROM input i JOIN slots USING ("jobId") JOIN live l ON l.name = i.schedule
        ORDER BY i.slot
        RETURNING id, "waitUntil"
      ), advanced AS (
        UPDATE ${s}."jobSchedule" s
        SET "plannedUntil" = GREATEST(COALESCE(s."plannedUntil", '-infinity'), m.latest)
        FROM (SELECT i.schedule, max(i.slot) AS latest FROM input i JOIN live l ON l.name = i.schedule
              GROUP BY i.schedule) AS m
        WHERE s.name = m.schedule
        RETURNING s.name
      ), woken AS (
        SELECT pg_notify($7, $8) WHERE EXISTS (SELECT 1 FROM inserted WHERE "waitUntil" <= now())
      )
      SELECT (SELECT count(*) FROM inserted)::int AS planned,
             (SELECT count(*) FROM advanced)::int AS schedules,
             (SELECT count(*) FROM woken)::int AS woken`,

    /** Moves the missed-slot mark of schedules with nothing to plan (a `skip` that found missed slots). $1 name[] $2 version[] */
    markPlannedUntilNow: `
      UPDATE ${s}."jobSchedule" s SET "plannedUntil" = GREATEST(COALESCE(s."plannedUntil", '-infinity'), now())
      FROM unnest($1::text[], $2::int[]) AS t(name, version)
      WHERE s.name = t.name AND s.version = t.version`,

    /**
     * Creates or changes a schedule. Its missed-slot mark starts at now: slots before it were never
     * owed. A change bumps `version` and restarts the mark, so the old definition's slots are
     * neither caught up nor planned again; an identical definition changes nothing. `changed` is
     * true only when an existing row changed: judged on what the write did (a new row's version
     * is 1), not on a read before it, since a schedule another instance creates after this
     * statement's snapshot is still updated here (the insert waits for it, then conflicts), and
     * the jobs planned for that first definition must then be removed like any other's.
     * Whether the schedule is paused is not part of its definition: writing it again (every boot
     * writes the static ones) neither pauses nor resumes it.
     *
     * $1 name $2 task $3 cron $4 timezone $5 payload $6 missedSlots $7 source $8 missedSlotGrace
     * $9 overlap
     */
    upsertSchedule: `
      WITH written AS (
        INSERT INTO ${s}."jobSchedule" AS s (id, name, task, cron, timezone, payload, "missedSlots",
                                             "missedSlotGrace", overlap, source, "plannedUntil")
        VALUES (gen_random_uuid(), $1, $2, $3, $4, $5::jsonb, $6, $8, $9, $7, now())
        ON CONFLICT (name) DO UPDATE SET
          task = EXCLUDED.task, cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, payload = EXCLUDED.payload,
          "missedSlots" = EXCLUDED."missedSlots", "missedSlotGrace" = EXCLUDED."missedSlotGrace",
          overlap = EXCLUDED.overlap, source = EXCLUDED.source, version = s.version + 1,
          "plannedUntil" = now(), "updatedAt" = now()
        -- A new grace or overlap policy is a change too: the planned jobs carry their deadline and
        -- their overlap mark, so they are replanned.
        WHERE (s.task, s.cron, s.timezone, s.payload, s."missedSlots", s."missedSlotGrace", s.overlap, s.source)
              IS DISTINCT FROM (EXCLUDED.task, EXCLUDED.cron, EXCLUDED.timezone, EXCLUDED.payload,
                                EXCLUDED."missedSlots", EXCLUDED."missedSlotGrace", EXCLUDED.overlap,
                                EXCLUDED.source)
        RETURNING version
      )
      SELECT EXISTS (SELECT 1 FROM written WHERE version > 1) AS changed`,

    /** $1 name */
    deleteSchedule: `DELETE FROM ${s}."jobSchedule" WHERE name = $1 RETURNING name`,

    /**
     * Pauses a schedule. The version bump makes a planning batch expanded before the pause land
     * nowhere (see `planSlots`); the planned jobs are then removed by `removeUnstartedPlannedJobs`,
     * in the same transaction, as for a change. $1 name
     */
    pauseSchedule: `
      UPDATE ${s}."jobSchedule" SET paused = true, version = version + 1, "updatedAt" = now()
      WHERE name = $1 RETURNING name`,

    /**
     * Resumes a paused schedule (a running one is left as it is). Its missed-slot mark restarts at
     * now: the slots of the pause were not missed, they were not wanted. `found` is false for an
     * unknown name. $1 name
     */
    resumeSchedule: `
      WITH target AS MATERIALIZED (
        SELECT name, paused FROM ${s}."jobSchedule" WHERE name = $1 FOR UPDATE
      ), resumed AS (
        UPDATE ${s}."jobSchedule" s
        SET paused = false, version = s.version + 1, "plannedUntil" = now(), "updatedAt" = now()
        FROM target t WHERE s.name = t.name AND t.paused
        RETURNING s.name
      )
      SELECT EXISTS (SELECT 1 FROM target) AS found, (SELECT count(*) FROM resumed)::int AS resumed`,

    /** $1 name */
    scheduleTask: `SELECT task FROM ${s}."jobSchedule" WHERE name = $1`,

    /**
     * One run of a schedule now, whether it is paused or not: a slot row at the database's now
     * (cron slots are whole seconds, now has microseconds) and its job, as the planner would have
     * planned them, so the run is judged like any slot of its schedule (its grace, its overlap
     * policy) and, while active, counts as the schedule's run. Returns no row for an unknown name.
     *
     * $1 name $2 jobId $3 maxRetries $4 createdBy $5 channel $6 notification $7 queue
     */
    triggerSchedule: `
      WITH sc AS (
        SELECT name, task, payload, "missedSlotGrace", overlap FROM ${s}."jobSchedule" WHERE name = $1
      ), slot AS (
        INSERT INTO ${s}."jobScheduleSlot" (schedule, slot, "jobId")
        SELECT name, now(), $2 FROM sc
        RETURNING "jobId"
      ), job AS (
        INSERT INTO ${s}.jobs (id, task, payload, "waitUntil", "startBy", "maxRetries", "isScheduled",
                               "overlapSchedule", "createdBy", queue, "queuedAgain")
        SELECT slot."jobId", sc.task, sc.payload, now(), now() + make_interval(secs => sc."missedSlotGrace"),
               $3, true, CASE WHEN sc.overlap = 'skip' THEN sc.name END, $4, $7, false
        FROM sc, slot
        RETURNING id
      ), woken AS (
        SELECT pg_notify($5, $6) FROM job
      )
      SELECT id, (SELECT count(*) FROM woken)::int AS woken FROM job`,

    /**
     * Removes the planned jobs of schedule $1 that have not started (no history row: never claimed)
     * and frees their slots for replanning. Must run in its own statement after the schedule row was
     * locked, so that it sees what a planner holding that lock committed. Claimed slots keep their
     * rows: a slot that ran is never planned again.
     *
     * $1 schedule
     */
    removeUnstartedPlannedJobs: `
      WITH gone AS (
        DELETE FROM ${s}.jobs j
        USING ${s}."jobScheduleSlot" p
        WHERE p.schedule = $1 AND p."jobId" = j.id
          AND NOT EXISTS (SELECT 1 FROM ${s}."jobHistory" h WHERE h.id = j.id)
        RETURNING j.id
      ), freed AS (
        DELETE FROM ${s}."jobScheduleSlot" WHERE schedule = $1 AND "jobId" IN (SELECT id FROM gone)
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM gone)::int AS removed, (SELECT count(*) FROM freed)::int AS freed`,

    /** Static schedules of the tasks $1 that are not among the names $2. */
    staleStaticSchedules: `
      SELECT name FROM ${s}."jobSchedule"
      WHERE source = 'static' AND task = ANY($1::text[]) AND NOT (name = ANY($2::text[]))`,

    /**
     * Slot rows matter while a planner could still expand their slot (planners start after the
     * database's now, so a slot far enough in the past is never a candidate again), while their
     * job is queued: the claim reads them to tell a `runOnce` schedule's latest missed slot, which
     * after a long downtime can be older than $1, and while their job runs: the claim tells an
     * `overlap: 'skip'` schedule's active run by its slot row, and a run can outlast $1. They are
     * also the record of which job a slot ran (a job's page, a schedule's last runs), so $1 is as
     * long as history keeps jobs (`slotRetentionSeconds`). One range of job_schedule_slot_slot,
     * each row of it looked up by its job's id.
     * $1 seconds
     */
    pruneSlots: `
      DELETE FROM ${s}."jobScheduleSlot" p
      WHERE p.slot < now() - make_interval(secs => $1)
        AND NOT EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.id = p."jobId")
        AND NOT EXISTS (SELECT 1 FROM ${s}."jobHistory" h WHERE h.id = p."jobId" AND h.state = 'active')`,
  };
}

export type CronSql = ReturnType<typeof cronSql>;
