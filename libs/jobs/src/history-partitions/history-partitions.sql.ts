import type { SchemaName } from '../database/schema-name.js';
import { DEFAULT_PARTITION, idBound, isTimePartitionName } from './partition-range.js';
import type { TimePartition } from './partition-range.js';

/** An index name the upkeep builds or attaches: the library's own, of lower case, digits and `_`. */
const INDEX_NAME = /^[a-z][a-z0-9_]{0,62}$/;

function indexName(name: string): string {
  if (!INDEX_NAME.test(name)) throw new Error(`${name} is not an index of jobHistory`);
  return name;
}

/**
 * The name of `parentIndex`'s index on `partition` (`jobHistory_default`, or a time partition's
 * name): the parent's, cut to leave room, with the partition's suffix in lower case.
 */
export function childIndexName(parentIndex: string, partition: string): string {
  const suffix = partition.replace(/^jobHistory_/, '').toLowerCase();
  return `${parentIndex.slice(0, 62 - suffix.length)}_${suffix}`;
}

/**
 * The statements of partition upkeep. DDL takes no parameters: a partition's name and bounds enter
 * the text, so they are made here from a `TimePartition` (digits of a time, checked again) and
 * nowhere else.
 */
export function historyPartitionsSql(schema: SchemaName) {
  const s = schema.quoted;
  const parent = `${s}."jobHistory"`;
  const defaultPartition = `${s}."${DEFAULT_PARTITION}"`;
  const table = (name: string) => {
    if (!isTimePartitionName(name) && name !== DEFAULT_PARTITION) {
      throw new Error(`${name} is not a partition of jobHistory`);
    }
    return `${s}."${name}"`;
  };
  /** The CHECK that tells PostgreSQL the default partition holds no row of `p`'s range. */
  const elsewhere = (p: TimePartition) => `"${p.name}_elsewhere"`;
  const bounds = (p: TimePartition) => [idBound(p.from), idBound(p.to)];
  /** Expired, in retention's words (`retention.sql.ts`): ended for good before the expiration. */
  const expired = (h: string) => `
    ${h}."completedAt" < now() - make_interval(secs => $1)
    AND ${h}.state NOT IN ('active', 'snoozed')
    AND NOT EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.id = ${h}.id)`;

  return {
    /** The database's clock (ms) and the partitions of history, with their bounds as printed. */
    partitions: `
      SELECT floor(extract(epoch FROM now()) * 1000)::float8 AS now,
             coalesce(array_agg(c.relname::text ORDER BY c.relname) FILTER (WHERE c.oid IS NOT NULL), '{}') AS names,
             coalesce(array_agg(pg_get_expr(c.relpartbound, c.oid) ORDER BY c.relname) FILTER (WHERE c.oid IS NOT NULL), '{}') AS bounds
      FROM (SELECT 1) one
      LEFT JOIN pg_inherits i ON i.inhparent = '${parent}'::regclass
      LEFT JOIN pg_class c ON c.oid = i.inhrelid`,

    /** Tables named as time partitions but not attached: what a failed round left. $1 schema name */
    detachedTables: `
      SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'r' AND NOT c.relispartition
        AND c.relname ~ '^jobHistory_[0-9]{8}T[0-9]{6}$'`,

    /**
     * The lease of one upkeep round across instances, the planner's pattern: a round is skipped when
     * another instance took the lease less than $2 seconds ago. Correctness never depends on it:
     * every step below checks the catalog and is safe to repeat.
     *
     * $1 instance $2 seconds
     */
    takeLease: `
      UPDATE ${s}."jobLock" SET "lastCheckedBy" = $1, "lastCheckedAt" = now()
      WHERE key = 'historyPartitions' AND "lastCheckedAt" <= now() - make_interval(secs => $2)
      RETURNING key`,

    /**
     * The timeouts of one upkeep transaction (see `HistoryPartitions.inShortTransaction`): lock
     * waits end at a quarter of `deadlock_timeout`, or at $1 if sooner; an idle transaction ends
     * at $1.
     *
     * $1 migrationTableLockTimeout (ms)
     */
    upkeepTimeouts: `
      SELECT set_config('lock_timeout',
               least($1::int, ceil(extract(epoch FROM current_setting('deadlock_timeout')::interval) * 250)::int) || 'ms',
               true),
             set_config('idle_in_transaction_session_timeout', $1::int || 'ms', true)`,

    /** A table shaped as the parent, with its CHECKs; the attach builds its (empty) indexes. */
    createTable: (p: TimePartition) => `
      CREATE TABLE IF NOT EXISTS ${table(p.name)} (LIKE ${parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS
        INCLUDING GENERATED INCLUDING STORAGE INCLUDING COMPRESSION)`,

    /** Whether the default partition holds rows of `p`'s range (a probe of its primary key). */
    defaultHoldsRange: (p: TimePartition) => {
      const [from, to] = bounds(p);
      return `SELECT EXISTS (SELECT 1 FROM ${defaultPartition} WHERE id >= '${from}' AND id < '${to}') AS held`;
    },

    /**
     * Deletes the expired rows of the default partition in `p`'s range (an old version 4 id, or a
     * row written while no partition covered its time), so that `p` can be attached; reports
     * whether rows remain there, which leave the range to the default partition for now.
     *
     * $1 historyExpiration (seconds; 0 keeps every row)
     */
    clearDefaultRange: (p: TimePartition) => {
      const [from, to] = bounds(p);
      const inRange = `h.id >= '${from}' AND h.id < '${to}'`;
      return `
        WITH cleared AS (
          DELETE FROM ${defaultPartition} h WHERE ${inRange} AND $1 > 0 AND ${expired('h')}
          RETURNING h.id
        )
        SELECT EXISTS (SELECT 1 FROM ${defaultPartition} h WHERE ${inRange}
                       AND h.id NOT IN (SELECT id FROM cleared)) AS held`;
    },

    /**
     * Attaching a range scans the default partition for rows of that range under an ACCESS
     * EXCLUSIVE lock, unless a valid CHECK proves there are none. So the CHECK is added NOT VALID
     * (a catalog change), validated (a scan under SHARE UPDATE EXCLUSIVE: writes go on), the
     * partition attached (SHARE UPDATE EXCLUSIVE on the parent; no scan), and the CHECK dropped.
     * While it exists, an id of that range, which is ahead of every clock, would fail to reach
     * the default: only a version 4 id of an old job can be one, once in about 10^9 ids a day.
     */
    addElsewhere: (p: TimePartition) => {
      const [from, to] = bounds(p);
      return `
        ALTER TABLE ${defaultPartition} DROP CONSTRAINT IF EXISTS ${elsewhere(p)};
        ALTER TABLE ${defaultPartition} ADD CONSTRAINT ${elsewhere(p)}
          CHECK (id < '${from}' OR id >= '${to}') NOT VALID`;
    },
    validateElsewhere: (p: TimePartition) =>
      `ALTER TABLE ${defaultPartition} VALIDATE CONSTRAINT ${elsewhere(p)}`,
    attach: (p: TimePartition) => {
      const [from, to] = bounds(p);
      return `ALTER TABLE ${parent} ATTACH PARTITION ${table(p.name)} FOR VALUES FROM ('${from}') TO ('${to}')`;
    },
    dropElsewhere: (p: TimePartition) =>
      `ALTER TABLE ${defaultPartition} DROP CONSTRAINT IF EXISTS ${elsewhere(p)}`,

    /**
     * Whether every row of `p` ended for good before the expiration, none is running or snoozed,
     * no queued job has an id in its range (a pending retry or snooze, whose row the next claim
     * rewrites), and no flow that has not expired does (its jobs expire together). Index probes only: the active index, the end-time index (its latest entry),
     * the state index, and the queue's primary key.
     *
     * $1 historyExpiration (seconds)
     */
    droppable: (p: TimePartition) => {
      const [from, to] = bounds(p);
      const t = table(p.name);
      return `
        SELECT NOT EXISTS (SELECT 1 FROM ${t} WHERE state = 'active')
           AND NOT EXISTS (SELECT 1 FROM ${t} WHERE state = 'snoozed' AND "completedAt" IS NOT NULL)
           AND coalesce((SELECT max("completedAt") FROM ${t}) < now() - make_interval(secs => $1), true)
           AND NOT EXISTS (SELECT 1 FROM ${s}.jobs WHERE id >= '${from}' AND id < '${to}')
           -- Its flows' jobs go with their flows, whole (retention's pruneFlows), before it.
           AND NOT EXISTS (SELECT 1 FROM ${s}."jobFlowMember"
                           WHERE "jobId" >= '${from}' AND "jobId" < '${to}') AS droppable`;
    },
    /**
     * The partitions that lack their index of a history index built `ON ONLY` the parent (by a
     * migration: an index of a partitioned table cannot be built CONCURRENTLY, see the rules of
     * `migrations.ts`), which stays invalid, unused, until every partition has one attached. Each
     * with the parent index's method and columns (`USING ...`, from its definition) and whether an
     * invalid index of the name `childIndexName` gives it is left there by a build that failed.
     * A partition made later gets its own at its attach: it is never listed.
     *
     * $1 schema name
     */
    partitionsMissingIndexes: `
      SELECT pi.relname::text AS index, c.relname::text AS partition,
             substring(pg_get_indexdef(pi.oid) FROM ' USING .*$') AS method,
             pg_relation_size(c.oid)::float8 AS bytes
      FROM pg_index px
      JOIN pg_class pi ON pi.oid = px.indexrelid
      JOIN pg_inherits inh ON inh.inhparent = '${parent}'::regclass
      JOIN pg_class c ON c.oid = inh.inhrelid
      WHERE px.indrelid = '${parent}'::regclass AND NOT px.indisvalid
        AND NOT EXISTS (SELECT 1 FROM pg_inherits ii JOIN pg_index ci ON ci.indexrelid = ii.inhrelid
                        WHERE ii.inhparent = pi.oid AND ci.indrelid = c.oid)
      ORDER BY c.relname, pi.relname`,

    /**
     * Whether index $2 of schema $1 exists and is invalid, and whether an index of its table is
     * being built now: an invalid index is a CONCURRENTLY build that failed only when none is (a
     * build in progress is invalid too, and dropping it would end another session's build).
     */
    indexBuildState: `
      SELECT NOT i.indisvalid AS invalid,
             EXISTS (SELECT 1 FROM pg_stat_progress_create_index p WHERE p.relid = i.indrelid) AS building
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2`,
    dropIndexConcurrently: (index: string) =>
      `DROP INDEX CONCURRENTLY IF EXISTS ${s}."${indexName(index)}"`,
    dropIndex: (index: string) => `DROP INDEX IF EXISTS ${s}."${indexName(index)}"`,
    /**
     * Builds `index` on `partition` with `method` (a parent index's `USING ...`, read from the
     * catalog): `concurrently`, without blocking writes (not in a transaction), or at once, holding
     * the partition's writes for the build (a SHARE lock), which a lock timeout bounds.
     */
    buildPartitionIndex: (
      index: string,
      partition: string,
      method: string,
      concurrently: boolean,
    ) =>
      // An index's name takes no schema: it is made in its table's.
      `CREATE INDEX ${concurrently ? 'CONCURRENTLY ' : ''}IF NOT EXISTS "${indexName(index)}" ON ${table(partition)} ${method}`,
    /** Attaching a partition's index: a catalog change; the last one makes the parent's valid. */
    attachIndex: (parentIndex: string, index: string) =>
      `ALTER INDEX ${s}."${indexName(parentIndex)}" ATTACH PARTITION ${s}."${indexName(index)}"`,

    /**
     * Detaching takes an ACCESS EXCLUSIVE lock on the parent, briefly (CONCURRENTLY is refused
     * where a default partition exists); dropping the detached table then locks nothing else.
     */
    detach: (p: TimePartition) => `ALTER TABLE ${parent} DETACH PARTITION ${table(p.name)}`,
    dropTable: (name: string) => `DROP TABLE IF EXISTS ${table(name)}`,
  };
}
