import type { SchemaName } from '../database/schema-name.js';

/*
 * Rules for every migration from version 5 on. Instances of a live fleet keep writing while one of
 * them migrates, so a migration must not block those writes for longer than a catalog change:
 *
 * - Released migrations (1-4 and every one after them once shipped) are never edited: a database
 *   that applied one never runs it again. Change the schema by appending a migration.
 * - An index on a table that can be large (`jobs`, `jobHistory`, `jobScheduleSlot`) is built with
 *   `CREATE INDEX CONCURRENTLY IF NOT EXISTS`, one index per statement, in a migration with
 *   `transactional: false` that names the index in `index`. A plain `CREATE INDEX` holds a SHARE
 *   lock for the whole build, which blocks every insert, update and delete of the table (claims,
 *   completions) until it ends; and CONCURRENTLY cannot run inside a transaction block.
 * - Such a migration must be idempotent on retry: it runs outside a transaction, so a crash or a
 *   failed build leaves part of it done. `IF NOT EXISTS` skips an index that was built, and a
 *   failed CONCURRENTLY build leaves an INVALID index of that name (which `IF NOT EXISTS` would
 *   wrongly skip): the migrator drops an invalid index named in `index` (`DROP INDEX CONCURRENTLY`)
 *   before running the statement. Drops are `DROP INDEX CONCURRENTLY IF EXISTS`.
 * - The version row of a non-transactional migration is inserted only after all its statements
 *   succeeded, so a failed one is run again, whole, by the next boot.
 * - A change of a small table, or one that only touches the catalog, stays transactional (`sql`).
 * - From version 13 on, `jobHistory` is partitioned (its partitions are made and dropped at run
 *   time, `history-partitions/`). `CREATE INDEX CONCURRENTLY` is refused on a partitioned table:
 *   build an index of history as `CREATE INDEX ... ON ONLY "jobHistory"` (nothing is built, a
 *   catalog change: it may go in a transactional migration), which stays invalid, unused, until
 *   each partition has its own attached. The partition upkeep builds those (CONCURRENTLY, then
 *   `ALTER INDEX ... ATTACH PARTITION`: `HistoryPartitions.completeIndexes`), and a partition made
 *   later gets its own at its attach. A unique index must include `id`, the partition key. A column added to `jobHistory` reaches every
 *   partition, and the partitions made later copy it (`LIKE "jobHistory"`).
 *
 * `migrations.spec.ts` holds these rules on `MIGRATIONS`.
 */

/** One statement of a non-transactional migration, run on its own (autocommit). */
export interface OnlineStatement {
  /** The index this statement builds, repaired (an invalid one dropped) before it runs. */
  readonly index?: string;
  readonly sql: string;
}

/** One schema change, run with its version row in one transaction. */
export interface TransactionalMigration {
  readonly version: number;
  readonly name: string;
  readonly transactional?: true;
  readonly sql: (schema: SchemaName) => string;
}

/**
 * A schema change run outside any transaction, statement by statement: what `CREATE INDEX
 * CONCURRENTLY` needs. Each statement must be idempotent (see the rules above).
 */
export interface OnlineMigration {
  readonly version: number;
  readonly name: string;
  readonly transactional: false;
  readonly statements: (schema: SchemaName) => readonly OnlineStatement[];
}

/** One schema change. Numbered and append-only: a released migration is never edited. */
export type Migration = TransactionalMigration | OnlineMigration;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'create the queue, history, schedule and lock tables',
    sql: ({ quoted: s }) => `
      CREATE TABLE ${s}.jobs (
        id uuid PRIMARY KEY,
        -- Insertion order: ids are random, so first-in-first-out needs a sequence of its own.
        seq bigint GENERATED ALWAYS AS IDENTITY,
        task text NOT NULL,
        payload jsonb NOT NULL DEFAULT '{}',
        priority integer NOT NULL DEFAULT 0,
        "waitUntil" timestamptz NOT NULL DEFAULT now(),
        retries integer NOT NULL DEFAULT 0,
        "maxRetries" integer NOT NULL,
        "isScheduled" boolean NOT NULL DEFAULT false,
        "uniqueKey" text,
        -- Someone holds a promise for this job: only then is its end worth a NOTIFY.
        awaited boolean NOT NULL DEFAULT false,
        "createdBy" text,
        "createdAt" timestamptz NOT NULL DEFAULT now(),
        "updatedAt" timestamptz NOT NULL DEFAULT now()
      );
      -- The claim walks this index in order: highest priority, then earliest due, then oldest.
      CREATE INDEX jobs_claim_order ON ${s}.jobs (priority DESC, "waitUntil", seq);
      -- A unique key holds while the job is pending; once claimed the key is free again.
      CREATE UNIQUE INDEX jobs_unique_key ON ${s}.jobs ("uniqueKey") WHERE "uniqueKey" IS NOT NULL;

      CREATE TABLE ${s}."jobHistory" (
        id uuid PRIMARY KEY,
        task text NOT NULL,
        state text NOT NULL CHECK (state IN ('active', 'completed', 'failed', 'interrupted', 'cancelled')),
        payload jsonb NOT NULL DEFAULT '{}',
        priority integer NOT NULL DEFAULT 0,
        -- The fencing token: every write that ends an attempt names the attempt it ends.
        attempt integer NOT NULL,
        "maxRetries" integer NOT NULL,
        "wasScheduled" boolean NOT NULL DEFAULT false,
        awaited boolean NOT NULL DEFAULT false,
        "lastErrorMessage" text,
        "executedBy" text,
        "createdAt" timestamptz NOT NULL,
        "startedAt" timestamptz,
        "completedAt" timestamptz,
        "updatedAt" timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX job_history_active ON ${s}."jobHistory" ("startedAt") WHERE state = 'active';
      CREATE INDEX job_history_completed_at ON ${s}."jobHistory" ("completedAt");

      CREATE TABLE ${s}."jobSchedule" (
        id uuid PRIMARY KEY,
        task text NOT NULL,
        cron text NOT NULL,
        payload jsonb NOT NULL DEFAULT '{}',
        "createdAt" timestamptz NOT NULL DEFAULT now(),
        "updatedAt" timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE ${s}."jobLock" (
        key text PRIMARY KEY,
        "lastCheckedBy" text,
        "lastCheckedAt" timestamptz NOT NULL DEFAULT '-infinity'
      );
      INSERT INTO ${s}."jobLock" (key) VALUES ('cron');
    `,
  },
  {
    version: 2,
    name: 'cron schedules by name, with zone, missed-slot policy and planned slots',
    sql: ({ quoted: s }) => `
      ALTER TABLE ${s}."jobSchedule"
        ALTER COLUMN id SET DEFAULT gen_random_uuid(),
        ADD COLUMN name text,
        ADD COLUMN timezone text NOT NULL DEFAULT 'UTC',
        ADD COLUMN "missedSlots" text NOT NULL DEFAULT 'skip' CHECK ("missedSlots" IN ('skip', 'runOnce')),
        ADD COLUMN source text NOT NULL DEFAULT 'dynamic' CHECK (source IN ('static', 'dynamic')),
        -- Bumped on every change: a planning batch only lands on the version it was expanded from.
        ADD COLUMN version integer NOT NULL DEFAULT 1,
        -- The latest slot planned: slots after it that are already past were missed.
        ADD COLUMN "plannedUntil" timestamptz;
      UPDATE ${s}."jobSchedule" SET name = task || ':' || id WHERE name IS NULL;
      ALTER TABLE ${s}."jobSchedule"
        ALTER COLUMN name SET NOT NULL,
        ADD CONSTRAINT "jobSchedule_name_key" UNIQUE (name);

      -- One row per planned slot. It must outlive the job (a claim deletes the job from jobs): its
      -- primary key is what stops a later planning round from planning a slot that already ran.
      CREATE TABLE ${s}."jobScheduleSlot" (
        schedule text NOT NULL,
        slot timestamptz NOT NULL,
        "jobId" uuid NOT NULL,
        "plannedAt" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (schedule, slot)
      );
      CREATE INDEX job_schedule_slot_slot ON ${s}."jobScheduleSlot" (slot);
      CREATE INDEX job_schedule_slot_job ON ${s}."jobScheduleSlot" ("jobId");
    `,
  },
  {
    version: 3,
    name: 'create the instances table for liveness',
    sql: ({ quoted: s }) => `
      -- One row per running instance. "heartbeatAt" is database time: instances never compare
      -- their own clocks, so a skewed host cannot make a live peer look dead.
      CREATE TABLE ${s}.instances (
        id text PRIMARY KEY,
        hostname text,
        pid integer,
        "startedAt" timestamptz NOT NULL DEFAULT now(),
        "heartbeatAt" timestamptz NOT NULL DEFAULT now(),
        -- Its own instanceTimeout: peers configured differently still judge it by what it promised.
        "instanceTimeout" double precision NOT NULL
      );
      -- The reaper looks up the instance of every active job.
      CREATE INDEX job_history_active_executed_by ON ${s}."jobHistory" ("executedBy") WHERE state = 'active';
    `,
  },
  {
    version: 4,
    name: 'fewer index writes per job in history',
    sql: ({ quoted: s }) => `
      -- Every claim inserted an entry here too, yet the reaper's only look-up by state = 'active'
      -- is served by job_history_active: the active set is small, bounded by the instances'
      -- concurrency.
      DROP INDEX ${s}.job_history_active_executed_by;
      -- An attempt that has not ended has no "completedAt": indexing its NULL cost every claim an
      -- index write that no query (retention, the dashboard's throughput) ever reads.
      CREATE INDEX job_history_ended_at ON ${s}."jobHistory" ("completedAt") WHERE "completedAt" IS NOT NULL;
      DROP INDEX ${s}.job_history_completed_at;
    `,
  },
  {
    version: 5,
    name: 'index history by state and end, for the dashboard',
    transactional: false,
    statements: ({ quoted: s }) => [
      {
        // The dashboard's lists of one ended state, latest first, walk it in order and stop at the
        // page; its stats and throughput read one recent window of it per state, index-only (task
        // and id included). Attempts that have not ended are left out, as in job_history_ended_at:
        // a claim writes no entry here, only the attempt's end does.
        index: 'job_history_state_ended_at',
        sql: `CREATE INDEX CONCURRENTLY IF NOT EXISTS job_history_state_ended_at
              ON ${s}."jobHistory" (state, "completedAt") INCLUDE (task, id)
              WHERE "completedAt" IS NOT NULL`,
      },
    ],
  },
  {
    version: 6,
    name: 'missed cron slots: a grace per schedule, a start deadline per job, the skipped state',
    sql: ({ quoted: s }) => `
      -- Existing schedules get the library's default grace (DEFAULT_MISSED_SLOT_GRACE).
      ALTER TABLE ${s}."jobSchedule"
        ADD COLUMN "missedSlotGrace" double precision NOT NULL DEFAULT 60 CHECK ("missedSlotGrace" > 0);
      -- A planned cron job's slot plus its schedule's grace: a claim after it records the job
      -- skipped instead of running it. NULL (every other job, and a cron job once it has started:
      -- retries and requeues do not carry it) never expires. Nullable without a default, so adding
      -- it rewrites nothing.
      ALTER TABLE ${s}.jobs ADD COLUMN "startBy" timestamptz;
      -- The upgrade is itself a restart: the planned jobs already queued get their deadline too, so
      -- the boot that applies this does not run them late. Only jobs never claimed (no history
      -- row): a retried or requeued cron job has started and is never skipped.
      UPDATE ${s}.jobs j SET "startBy" = p.slot + make_interval(secs => sc."missedSlotGrace")
      FROM ${s}."jobScheduleSlot" p JOIN ${s}."jobSchedule" sc ON sc.name = p.schedule
      WHERE p."jobId" = j.id AND NOT EXISTS (SELECT 1 FROM ${s}."jobHistory" h WHERE h.id = j.id);
      -- NOT VALID: validating would scan all of history under this transaction's exclusive lock,
      -- blocking every write meanwhile, to prove what the constraint it replaces already proved
      -- (its states are a subset). New and updated rows are checked all the same.
      ALTER TABLE ${s}."jobHistory" DROP CONSTRAINT "jobHistory_state_check";
      ALTER TABLE ${s}."jobHistory" ADD CONSTRAINT "jobHistory_state_check"
        CHECK (state IN ('active', 'completed', 'failed', 'interrupted', 'cancelled', 'skipped')) NOT VALID;
    `,
  },
  {
    version: 7,
    name: 'schedules that pause and that do not overlap their own runs',
    sql: ({ quoted: s }) => `
      -- Constant defaults: existing schedules read as before (overlapping allowed, running), and
      -- PostgreSQL 11+ adds such columns to the catalog without rewriting the table.
      ALTER TABLE ${s}."jobSchedule"
        ADD COLUMN overlap text NOT NULL DEFAULT 'allow' CHECK (overlap IN ('allow', 'skip')),
        -- A paused schedule keeps its row (and its name) but is not planned; resuming does not
        -- catch up the slots of the pause.
        ADD COLUMN paused boolean NOT NULL DEFAULT false;
      -- The schedule (overlap: 'skip') whose active run makes the claim skip this job; NULL for
      -- every other job, so that the claim judges nothing for them. Nullable without a default:
      -- adding it rewrites nothing, and the jobs already planned keep overlapping allowed, as their
      -- schedules say.
      ALTER TABLE ${s}.jobs ADD COLUMN "overlapSchedule" text;
    `,
  },
  {
    version: 8,
    name: 'the trace context of a job, for the spans of its attempts',
    sql: ({ quoted: s }) => `
      -- Where the enqueue was traced (a W3C trace context: the propagator's fields), so that each
      -- attempt's span joins that trace on whichever instance runs it. Kept in history too: a retry
      -- or a requeue is inserted again from there. NULL when telemetry is off. Nullable without a
      -- default: adding them only touches the catalog.
      ALTER TABLE ${s}.jobs ADD COLUMN "traceContext" jsonb;
      ALTER TABLE ${s}."jobHistory" ADD COLUMN "traceContext" jsonb;
    `,
  },
  {
    version: 9,
    name: "a job's result and progress, and the snoozed state",
    sql: ({ quoted: s }) => `
      -- What the completed attempt's task returned (NULL: nothing), and the last progress the latest
      -- attempt that reported one wrote. Nullable without defaults: adding them rewrites nothing.
      ALTER TABLE ${s}."jobHistory" ADD COLUMN result jsonb, ADD COLUMN progress jsonb;
      -- snoozed: the task asked to run later; the job is queued again with its attempt unconsumed.
      -- NOT VALID, as in migration 6: the states it replaces are a subset, and validating would scan
      -- all of history under this transaction's exclusive lock.
      ALTER TABLE ${s}."jobHistory" DROP CONSTRAINT "jobHistory_state_check";
      ALTER TABLE ${s}."jobHistory" ADD CONSTRAINT "jobHistory_state_check"
        CHECK (state IN ('active', 'completed', 'failed', 'interrupted', 'cancelled', 'skipped', 'snoozed')) NOT VALID;
    `,
  },
  {
    version: 10,
    name: 'named queues: the queue and group of each job, pause state, cluster-wide limits',
    sql: ({ quoted: s }) => `
      -- Constant defaults and nullable columns: PostgreSQL 11+ adds them to the catalog without
      -- rewriting the tables. Jobs queued before the upgrade are in the default queue until they
      -- start, when the claim records their task's queue.
      ALTER TABLE ${s}.jobs ADD COLUMN queue text NOT NULL DEFAULT 'default', ADD COLUMN "groupKey" text;
      -- Written by the claim from the claiming instance's task-to-queue mapping: what the
      -- cluster-wide limits count.
      ALTER TABLE ${s}."jobHistory" ADD COLUMN queue text NOT NULL DEFAULT 'default',
        ADD COLUMN "groupKey" text;

      -- A queue's persisted state. A queue without a row is running. A queue with cluster-wide
      -- limits keeps their state here too, written by its claims under its claim lock (below):
      -- - the attempts its claims started that were still active at its latest claim, as parallel
      --   arrays (job id, attempt, groupKey). Each is looked up by primary key in history at the
      --   next claim: counting the active rows of history instead would scan job_history_active,
      --   which keeps an entry for every attempt that ended since the last vacuum, many times a
      --   second;
      -- - the time and job count of each of its claims that started jobs within the last rate
      --   window. History cannot say it: a retry overwrites its job's earlier start.
      -- Arrays, not JSON: a row of a few hundred entries stays under the size PostgreSQL compresses
      -- or moves out of line, and the update, which changes no indexed column, stays HOT.
      CREATE TABLE ${s}.queues (
        name text PRIMARY KEY,
        paused boolean NOT NULL DEFAULT false,
        "updatedAt" timestamptz NOT NULL DEFAULT now(),
        "activeIds" uuid[] NOT NULL DEFAULT '{}',
        "activeAttempts" integer[] NOT NULL DEFAULT '{}',
        "activeGroups" text[] NOT NULL DEFAULT '{}',
        "startTimes" timestamptz[] NOT NULL DEFAULT '{}',
        "startCounts" integer[] NOT NULL DEFAULT '{}'
      );

      -- Serialises the claims of one limited queue across the cluster and reads its state with a
      -- fresh snapshot. The claim statement's own snapshot was taken before it waited for the lock,
      -- so it does not see the claims committed meanwhile; each statement of a VOLATILE function
      -- takes a new snapshot, after the lock here, and sees them. The lock is the transaction's:
      -- held until the claim commits, so the next claim of the queue counts this one's jobs. Only
      -- the claim statement writes the row back (a write here would be invisible to it).
      -- "lockedAt" is the clock of the claim's starts: taken under the lock, it never goes back
      -- from one claim of the queue to the next, so a start older than one window is never needed
      -- again.
      --
      -- $1 queue $2 lock key $3 rate period (seconds; NULL: not rate-limited)
      CREATE FUNCTION ${s}."claimQueueLoad"(text, bigint, double precision,
        OUT "lockedAt" timestamptz, OUT active integer, OUT "activeByGroup" jsonb,
        OUT "activeIds" uuid[], OUT "activeAttempts" integer[], OUT "activeGroups" text[],
        OUT started integer, OUT "firstStart" timestamptz, OUT "startTimes" timestamptz[],
        OUT "startCounts" integer[])
      LANGUAGE plpgsql VOLATILE AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock($2);
        "lockedAt" := clock_timestamp();
        -- An attempt is active while its history row is at that attempt and active: a scalar
        -- subquery per entry, so that each stays a primary-key look-up. One pass fills the three
        -- arrays in the same order.
        SELECT coalesce(array_agg(a.id), '{}'), coalesce(array_agg(a.attempt), '{}'),
               coalesce(array_agg(a.g), '{}'), count(*)::integer
          INTO "activeIds", "activeAttempts", "activeGroups", active
          FROM ${s}.queues q,
               unnest(q."activeIds", q."activeAttempts", q."activeGroups") AS a(id, attempt, g)
          WHERE q.name = $1
            AND (SELECT true FROM ${s}."jobHistory" h
                 WHERE h.id = a.id AND h.attempt = a.attempt AND h.state = 'active') IS NOT NULL;
        SELECT coalesce(jsonb_object_agg(g.key, g.n), '{}') INTO "activeByGroup"
          FROM (SELECT a.g AS key, count(*) AS n FROM unnest("activeGroups") AS a(g)
                WHERE a.g IS NOT NULL GROUP BY 1) g;
        SELECT coalesce(array_agg(w.t), '{}'), coalesce(array_agg(w.n), '{}'),
               coalesce(sum(w.n), 0)::integer, min(w.t)
          INTO "startTimes", "startCounts", started, "firstStart"
          FROM ${s}.queues q, unnest(q."startTimes", q."startCounts") AS w(t, n)
          WHERE q.name = $1 AND $3 IS NOT NULL AND w.t > "lockedAt" - make_interval(secs => $3);
      END
      $$;
    `,
  },
  {
    version: 11,
    name: 'how many times each job snoozed',
    sql: ({ quoted: s }) => `
      -- Counted by every snooze over the job's whole life: history keeps one row per job, which the
      -- job's next claim overwrites, and no write but a snooze touches the count. A constant
      -- default: PostgreSQL 11+ adds the column to the catalog without rewriting the table.
      ALTER TABLE ${s}."jobHistory" ADD COLUMN snoozes integer NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 12,
    name: 'a fencing token unique to each claim',
    sql: ({ quoted: s }) => `
      -- The claim's token: the "seq" of the queued row the claim took, which no other queued row
      -- ever had. Every write that ends an attempt names it: the attempt number alone is reused by
      -- a snooze, so a repeated write of an earlier claim could match a later one. NULL for
      -- attempts claimed before this migration (no default: the catalog alone changes).
      ALTER TABLE ${s}."jobHistory" ADD COLUMN "claimToken" bigint;
    `,
  },
  {
    version: 13,
    name: 'history partitioned by job id (time): the table so far becomes the default partition',
    sql: ({ quoted: s }) => `
      -- Catalog changes only, under one brief ACCESS EXCLUSIVE lock (taken with the migrator's
      -- short lock_timeout and retried): nothing is scanned or rewritten, whatever the table holds.
      -- The table so far becomes the DEFAULT partition of a new parent partitioned by RANGE (id):
      -- attached to a parent without other partitions, a default partition has no constraint to
      -- prove, so PostgreSQL does not scan it. It keeps every row, of every id version: job ids
      -- were random (version 4) before they sorted by time, so an old table's ids are spread over
      -- the whole uuid range and could not be bounded by a CHECK. The library then attaches
      -- partitions of time ranges ahead (history-partitions/); any id outside them (an old job's,
      -- a row written while no partition covered its time) lands in the default and never fails.
      ALTER TABLE ${s}."jobHistory" RENAME TO "jobHistory_default";
      ALTER TABLE ${s}."jobHistory_default" RENAME CONSTRAINT "jobHistory_pkey" TO "jobHistory_default_pkey";
      -- The columns as they are now (those other migrations added included), not a list of them.
      CREATE TABLE ${s}."jobHistory" (LIKE ${s}."jobHistory_default" INCLUDING DEFAULTS INCLUDING GENERATED
        INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS) PARTITION BY RANGE (id);
      -- The primary key stays (id): a look-up by id, and ON CONFLICT (id), reach one partition.
      ALTER TABLE ONLY ${s}."jobHistory" ADD CONSTRAINT "jobHistory_pkey" PRIMARY KEY (id);
      DO $do$
      DECLARE r record;
      BEGIN
        -- Every CHECK as valid as it is on the table: a partition's NOT VALID constraint may only
        -- match a NOT VALID one of its parent, and validating would scan the table.
        FOR r IN SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
                 WHERE conrelid = '${s}."jobHistory_default"'::regclass AND contype = 'c' LOOP
          EXECUTE format('ALTER TABLE ${s}."jobHistory" ADD CONSTRAINT %I %s', r.conname, r.def);
        END LOOP;
        -- Every other index of the table, by its definition: the parent's keeps the name (on ONLY
        -- the parent: nothing is built), the table's is renamed, and the attach below pairs them.
        FOR r IN SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def
                 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                 WHERE i.indrelid = '${s}."jobHistory_default"'::regclass AND NOT i.indisprimary LOOP
          EXECUTE format('ALTER INDEX ${s}.%I RENAME TO %I', r.name, left(r.name, 55) || '_default');
          EXECUTE regexp_replace(r.def, ' ON \\S+ USING ', ' ON ONLY ${s}."jobHistory" USING ');
        END LOOP;
      END
      $do$;
      ALTER TABLE ${s}."jobHistory" ATTACH PARTITION ${s}."jobHistory_default" DEFAULT;
      -- The lease of partition upkeep (creating ahead, dropping expired), as 'cron' is the planner's.
      INSERT INTO ${s}."jobLock" (key) VALUES ('historyPartitions') ON CONFLICT DO NOTHING;
    `,
  },
  {
    version: 14,
    name: 'flows: jobs that wait for other jobs',
    sql: ({ quoted: s }) => `
      -- A flow: jobs added together, some waiting for others (addFlow).
      CREATE TABLE ${s}."jobFlow" (
        id uuid PRIMARY KEY,
        name text,
        "createdBy" text,
        "createdAt" timestamptz NOT NULL DEFAULT now()
      );
      -- Each job of a flow, by the ref it was given. Written once by addFlow and read by getFlow
      -- and ctx.dependencies(): the hot path never touches it.
      CREATE TABLE ${s}."jobFlowMember" (
        "jobId" uuid PRIMARY KEY,
        "flowId" uuid NOT NULL,
        ref text NOT NULL,
        "dependsOn" text[] NOT NULL DEFAULT '{}',
        "onDependencyFailure" text NOT NULL DEFAULT 'cancel'
          CHECK ("onDependencyFailure" IN ('cancel', 'run')),
        -- Its place in the addFlow call: getFlow lists the jobs in that order.
        position integer NOT NULL,
        UNIQUE ("flowId", ref)
      );
      -- Retention walks the flows from the oldest (pruneFlows), the admin API's list from the
      -- latest. Built with the table, empty: no write waits on it.
      CREATE INDEX job_flow_created_at ON ${s}."jobFlow" ("createdAt", id);
      -- One row per dependency: "jobId" waits for "dependsOn". "ended" says the dependency's end
      -- was counted, so that a job that ends again (retried by hand) never unblocks twice.
      -- Half of each page left free: the update that marks an edge ended finds room on its own
      -- page, and changes no indexed column, so it is a HOT update that writes no index entry (a
      -- job with 10,000 dependents marks them in one statement, before any of them can run).
      CREATE TABLE ${s}."jobDependency" (
        "dependsOn" uuid NOT NULL,
        "jobId" uuid NOT NULL,
        ended boolean NOT NULL DEFAULT false,
        PRIMARY KEY ("dependsOn", "jobId")
      ) WITH (fillfactor = 50);
      -- A flow job is marked in the queue and in history ("inFlow" true; NULL for every other job:
      -- adding them touches only the catalog), so that the trigger below fires for its endings
      -- alone; its flow is in "jobFlowMember". A flag, not the flow's id: history's rows stay as
      -- narrow as they were (the planner's estimate of a history whose statistics are stale, and
      -- the retention's plan with it, follows the row's width). "blockedBy": how many of its
      -- dependencies have not ended; a blocked job waits in the queue with "waitUntil" =
      -- 'infinity', past every claim's reach, and its own in "blockedWaitUntil" (NULL: none), applied
      -- when its last dependency ends. In the row the release writes anyway: read from anywhere
      -- else, it was a probe per released job (~40 of the ~130 ms that release 9,998 dependents).
      ALTER TABLE ${s}.jobs ADD COLUMN "inFlow" boolean, ADD COLUMN "blockedBy" integer,
        ADD COLUMN "blockedWaitUntil" timestamptz;
      ALTER TABLE ${s}."jobHistory" ADD COLUMN "inFlow" boolean;

      -- A flow job ended for good without completing (failed, or interrupted, with no retry queued
      -- by the statement that wrote it; cancelled): each of its dependents still blocked either is
      -- cancelled (its policy is 'cancel'), which ends it in turn (this trigger again: the cancel
      -- goes down the flow), or counts one dependency fewer, and is due when none is left. It runs
      -- inside the statement that wrote the ending, so the ending's fence is its fence: a stale or
      -- repeated write that ends nothing fires nothing. A completion is counted by the statement
      -- that writes it (the runner's completeInFlow), once per dependent for a whole batch, where
      -- a trigger fires once per row.
      --
      -- Each row it reads or writes is reached by its key, in one statement: the dependents found
      -- by "id = ANY(ARRAY(...))", their policy by a scalar subquery on "jobFlowMember"'s key, the
      -- ended job's ref only for a cancel's message. A join of "jobFlowMember"
      -- instead became, once "jobDependency" had grown with the row versions the endings write, a
      -- scan of all of it for each ending (test/flows/flow-ending-plan.spec.ts).
      CREATE FUNCTION ${s}."flowJobEnded"() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        channel text := TG_TABLE_SCHEMA || '_scheduler';
        notified integer;
        due integer;
      BEGIN
        WITH counted AS (
          UPDATE ${s}."jobDependency" d SET ended = true
          WHERE d."dependsOn" = NEW.id AND NOT d.ended
            -- A failure whose retry the same statement queued is not an end.
            AND NOT EXISTS (SELECT 1 FROM ${s}.jobs WHERE id = NEW.id)
          -- A dependent outside every flow (a task's ctx.waitForJobs) is told, never cancelled.
          RETURNING d."jobId",
                    COALESCE((SELECT m."onDependencyFailure" = 'cancel' FROM ${s}."jobFlowMember" m
                              WHERE m."jobId" = d."jobId"), false) AS cancels
        ), removed AS (
          DELETE FROM ${s}.jobs j
          WHERE j.id = ANY(ARRAY(SELECT "jobId" FROM counted WHERE cancels)) AND j."blockedBy" > 0
          RETURNING j.*
        ), cancelled AS (
          INSERT INTO ${s}."jobHistory" AS h (id, task, state, payload, priority, attempt, "maxRetries",
                                               "wasScheduled", awaited, "createdAt", "completedAt", queue,
                                               "groupKey", "inFlow", "lastErrorMessage")
          SELECT id, task, 'cancelled', payload, priority, retries, "maxRetries", "isScheduled", awaited,
                 "createdAt", now(), queue, "groupKey", "inFlow",
                 format('Cancelled: its dependency "%s" (%s) ended %s.',
                        (SELECT m.ref FROM ${s}."jobFlowMember" m WHERE m."jobId" = NEW.id),
                        NEW.id, NEW.state)
          FROM removed
          ON CONFLICT (id) DO UPDATE SET state = 'cancelled', "completedAt" = now(), "updatedAt" = now(),
            "lastErrorMessage" = EXCLUDED."lastErrorMessage", awaited = h.awaited OR EXCLUDED.awaited
          RETURNING id, awaited
        ), unblocked AS (
          UPDATE ${s}.jobs j
          SET "blockedBy" = j."blockedBy" - 1,
              "waitUntil" = CASE WHEN j."blockedBy" = 1 THEN GREATEST(now(), j."blockedWaitUntil")
                                 ELSE j."waitUntil" END
          WHERE j.id = ANY(ARRAY(SELECT "jobId" FROM counted WHERE NOT cancels)) AND j."blockedBy" > 0
          RETURNING j."blockedBy", j."waitUntil"
        ), told AS (
          SELECT pg_notify(channel, json_build_object('event', 'jobCompleted', 'id', id,
                                                      'state', 'cancelled')::text)
          FROM cancelled WHERE awaited
        )
        SELECT (SELECT count(*) FROM told), count(*) FILTER (WHERE "blockedBy" = 0 AND "waitUntil" <= now())
          INTO notified, due FROM unblocked;
        IF due > 0 THEN
          PERFORM pg_notify(channel, '{"event":"newJob"}');
        END IF;
        RETURN NULL;
      END
      $$;
      CREATE TRIGGER flow_job_ended AFTER INSERT OR UPDATE OF state ON ${s}."jobHistory"
        FOR EACH ROW
        WHEN (NEW."inFlow" AND NEW.state IN ('failed', 'interrupted', 'cancelled'))
        EXECUTE FUNCTION ${s}."flowJobEnded"();
    `,
  },
  {
    version: 15,
    name: 'durable steps: checkpoints, events and the waits of suspended jobs',
    sql: ({ quoted: s }) => `
      -- Catalog changes and new tables only: no write waits on them.
      --
      -- A step's checkpoint (ctx.step, ctx.sleep, ctx.waitForEvent), by job and step name (a name
      -- repeated in one run is numbered: "name#2"). Written by the attempt that ran the step, fenced
      -- by its claim ("attempt", "claimToken"); read back by every later run of the job, which
      -- returns "value" (JSON; NULL for a step that returned nothing) instead of running the step.
      -- 'running' is a sleep or an event wait not over yet ("value" then holds its "until").
      CREATE TABLE ${s}."jobStep" (
        "jobId" uuid NOT NULL,
        name text NOT NULL,
        -- The order of the first calls: getJob lists the steps in it.
        position integer NOT NULL,
        state text NOT NULL CHECK (state IN ('running', 'completed', 'failed')),
        value jsonb,
        error text,
        "startedAt" timestamptz NOT NULL,
        "endedAt" timestamptz,
        attempt integer NOT NULL,
        "claimToken" bigint,
        PRIMARY KEY ("jobId", name)
      );
      -- Events (queue.sendEvent): the first of a name wins, and is kept historyExpiration so that
      -- a wait that starts later still sees it.
      CREATE TABLE ${s}."jobEvent" (
        name text PRIMARY KEY,
        payload jsonb,
        "createdAt" timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX job_event_created_at ON ${s}."jobEvent" ("createdAt");
      -- The jobs suspended on an event, by its name: sendEvent makes them due at once.
      CREATE TABLE ${s}."jobEventWait" (
        event text NOT NULL,
        "jobId" uuid NOT NULL,
        PRIMARY KEY (event, "jobId")
      );
      -- What a suspended job waits for ({ until }, { event, until }): NULL for every other job
      -- (adding it touches only the catalog). A suspended job is queued like a snoozed one, due at
      -- its "until" ('infinity' for an event wait without a timeout).
      ALTER TABLE ${s}.jobs ADD COLUMN "waitingFor" jsonb;
    `,
  },
  {
    version: 16,
    name: "every attempt that ended without completing, for the job's page; history keeps the unique key",
    sql: ({ quoted: s }) => `
      -- A new table and catalog changes only: no write waits on them.
      --
      -- A job's history row is its last attempt: the next claim overwrites the attempt before it.
      -- Each attempt that ends without completing is also written here, by the statement that ends
      -- it (fenced like it: a stale or repeated ending writes nothing): failed, interrupted (the
      -- reaper's rescue, shutdown's release), snoozed (ctx.snooze, a durable step's suspension) or
      -- cancelled while it ran. Those are rare: a completion writes nothing here, and the job's
      -- page takes its completed attempt from history. Each with its instance, times and error (a
      -- failure's with its stack). Pruned with history, by the retention's round that prunes steps.
      --
      -- Keyed by the attempt's start, not its number: an interrupted or snoozed attempt does not
      -- consume its number, so the attempt after it has the same one. Two claims of one job never
      -- start at the same time: the next claim begins after the previous attempt's ending commits.
      CREATE TABLE ${s}."jobAttempt" (
        "jobId" uuid NOT NULL,
        "startedAt" timestamptz NOT NULL,
        attempt integer NOT NULL,
        outcome text NOT NULL CHECK (outcome IN ('failed', 'interrupted', 'snoozed', 'cancelled')),
        "executedBy" text,
        "endedAt" timestamptz NOT NULL,
        error text,
        stack text,
        PRIMARY KEY ("jobId", "startedAt")
      );

      -- The job's unique key (addJob's uniqueKey), kept for its whole life: in the queue it is the
      -- lock of one pending job per key and is gone once the job starts, so the admin search by key
      -- reads it here. Written by the claim (and by a cancel of a queued job), never cleared by the
      -- claims after it. Nullable without a default: the catalog alone changes, on every partition.
      ALTER TABLE ${s}."jobHistory" ADD COLUMN "uniqueKey" text;
      -- The search by key. On ONLY the partitioned parent: nothing is built here, nothing waits. A
      -- partition attached later builds its own (empty) at its attach; those of the partitions
      -- that exist now are built CONCURRENTLY and attached by the partition upkeep
      -- (history-partitions/, completeIndexes), after which this one is valid and used.
      CREATE INDEX job_history_unique_key ON ONLY ${s}."jobHistory" ("uniqueKey")
        WHERE "uniqueKey" IS NOT NULL;
    `,
  },
  {
    version: 17,
    name: 'instances say how many jobs each runs at once',
    sql: ({ quoted: s }) => `
      -- A catalog change only. Each instance's concurrency (0 for one that runs no jobs), written
      -- at its registration and its heartbeats, so that the console shows how full each is. NULL
      -- for an instance of an earlier version, which does not write it.
      ALTER TABLE ${s}.instances ADD COLUMN concurrency integer;
    `,
  },
  {
    version: 18,
    name: "per-minute figures: each task's endings and durations, each queue's depth",
    sql: ({ quoted: s }) => `
      -- New tables only, small (a row per minute, per task or queue, for a day): no write waits on
      -- them, and the hot path never touches them. Written once a minute by one instance
      -- (minute-stats/), read by the admin API where history would be read whole.
      --
      -- A minute that was written: its primary key is what makes a minute written at most once
      -- (every figure of it is inserted by the statement that inserts this row, or not at all).
      CREATE TABLE ${s}."jobMinute" (
        minute timestamptz PRIMARY KEY,
        "writtenBy" text,
        "writtenAt" timestamptz NOT NULL DEFAULT now()
      );
      -- A task's jobs whose last attempt ended in the minute: how many completed and failed, and
      -- the completed ones' durations as a histogram of fixed log-spaced buckets (bucket numbers
      -- and their counts, the empty buckets left out), so that percentiles over any window are
      -- read from summed buckets (minute-stats/duration-buckets.ts).
      CREATE TABLE ${s}."jobTaskMinute" (
        minute timestamptz NOT NULL REFERENCES ${s}."jobMinute" ON DELETE CASCADE,
        task text NOT NULL,
        completed integer NOT NULL,
        failed integer NOT NULL,
        buckets smallint[] NOT NULL,
        counts integer[] NOT NULL,
        PRIMARY KEY (minute, task)
      );
      -- The same per hour, summed from the hour's minutes once it closed (by the first minute
      -- written after it): a day's figures read 24 rows a task, not 1,440 (each with its buckets).
      -- An hour without one (no minute written after it, soon enough) is read from its minutes.
      CREATE TABLE ${s}."jobTaskHour" (
        hour timestamptz NOT NULL,
        task text NOT NULL,
        completed integer NOT NULL,
        failed integer NOT NULL,
        buckets smallint[] NOT NULL,
        counts integer[] NOT NULL,
        PRIMARY KEY (hour, task)
      );
      -- A queue's depth, sampled once at the end of the minute.
      CREATE TABLE ${s}."jobQueueMinute" (
        minute timestamptz NOT NULL REFERENCES ${s}."jobMinute" ON DELETE CASCADE,
        queue text NOT NULL,
        pending integer NOT NULL,
        blocked integer NOT NULL,
        due integer NOT NULL,
        active integer NOT NULL,
        PRIMARY KEY (minute, queue)
      );
      -- The lease of the minute's writer: its "lastCheckedAt" is the latest minute an instance
      -- took to write, so that one instance a minute samples the queue.
      INSERT INTO ${s}."jobLock" (key) VALUES ('minuteStats') ON CONFLICT DO NOTHING;
    `,
  },
  {
    version: 19,
    name: 'queued jobs say whether they may have run before',
    sql: ({ quoted: s }) => `
      -- A catalog change only (a constant default is not written into the rows).
      --
      -- A queued job has a history row only when it was queued again: after a failed, snoozed or
      -- interrupted attempt, or by a retry of a job that ended. That row holds its last error, so
      -- a search of the queue by error text need only look up these jobs, not match the queue
      -- against every failed attempt in history (test/admin/admin-plans.spec.ts). The statements
      -- that add a job (addJob, addFlow, cron) write false; every other writer of the queue queues
      -- a job again, and gets the default: true, also for an instance of an earlier version, which
      -- does not know the column. A job wrongly true costs the search one primary-key look-up.
      ALTER TABLE ${s}.jobs ADD COLUMN "queuedAgain" boolean NOT NULL DEFAULT true;
    `,
  },
  {
    version: 20,
    name: 'index the jobs queued again',
    transactional: false,
    statements: ({ quoted: s }) => [
      {
        // The search of the queue by error text starts from these, a few of the queue as a rule.
        // No write of a job added pays for it: a row that is not in a partial index's predicate
        // adds no entry.
        index: 'jobs_queued_again',
        sql: `CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_queued_again ON ${s}.jobs (id)
              WHERE "queuedAgain"`,
      },
    ],
  },
];

/** The schema version this build of the library expects. */
export const LATEST_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;
