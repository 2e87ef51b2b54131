/**
 * The time partitions of `jobHistory`, as pure values. A job id is a UUID of version 7 whose first
 * 48 bits are the milliseconds it was made at, so a range of times is a range of ids: a partition
 * covering [from, to) in milliseconds holds the ids from `idBound(from)` (included) to
 * `idBound(to)` (excluded), which is what lets `jobHistory` be partitioned by RANGE (id) and keep
 * its primary key (id).
 */

/** The default partition: rows of no time partition (ids of version 4, times not covered). */
export const DEFAULT_PARTITION = 'jobHistory_default';

/** The name of a time partition: `jobHistory_` and its start in UTC, to the second. */
const PARTITION_NAME = /^jobHistory_(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A bound as `pg_get_expr` prints a partition's: `FOR VALUES FROM ('<uuid>') TO ('<uuid>')`. */
const BOUND_EXPRESSION = /^FOR VALUES FROM \('([0-9a-f-]{36})'\) TO \('([0-9a-f-]{36})'\)$/;
/** The first 48 bits of a UUID: 2^48 ms reach the year 10889. */
const MAX_MS = 2 ** 48;

/** A time partition of `jobHistory`. */
export interface TimePartition {
  readonly name: string;
  /** Its first millisecond (included) and its end (excluded). */
  readonly from: number;
  readonly to: number;
}

/** The smallest id made at millisecond `ms`: the 48 bits of time, then zeros. */
export function idBound(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0 || ms >= MAX_MS) {
    throw new RangeError(`${ms} is no millisecond a version 7 UUID can hold`);
  }
  const hex = ms.toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}-0000-0000-000000000000`;
}

/** The millisecond of an id bound (or of any UUID of version 7). */
export function msOfId(id: string): number {
  if (!UUID.test(id)) throw new RangeError(`${id} is not a lower-case UUID`);
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** The name of the time partition that starts at `from`. */
export function partitionName(from: number): string {
  const iso = new Date(from).toISOString(); // 2026-12-10T06:00:00.000Z
  return `jobHistory_${iso.slice(0, 10).replaceAll('-', '')}T${iso.slice(11, 19).replaceAll(':', '')}`;
}

/** Whether `name` is a time partition's name (the library's, never the default or another table). */
export function isTimePartitionName(name: string): boolean {
  return PARTITION_NAME.test(name);
}

/** The start (ms) of the time partition named `name`. */
export function startOfName(name: string): number {
  const match = PARTITION_NAME.exec(name);
  if (!match) throw new RangeError(`${name} is not a time partition's name`);
  const [year, month, day, hour, minute, second] = match.slice(1).map(Number);
  return Date.UTC(year, month - 1, day, hour, minute, second);
}

/**
 * The time partition an attached partition is, from its name and bound expression; `undefined`
 * for the default partition and for any partition the library did not make.
 */
export function timePartitionOf(name: string, bound: string): TimePartition | undefined {
  const match = BOUND_EXPRESSION.exec(bound);
  if (!isTimePartitionName(name) || !match) return undefined;
  return { name, from: msOfId(match[1]), to: msOfId(match[2]) };
}

/**
 * How far past the database's clock a partition made now starts, at the least. While it is made,
 * the default partition carries a CHECK that its range is elsewhere (so that the attach need not
 * scan it): a row of that range written to the default partition meanwhile would be refused, and
 * that row could be the end of a running job. So no job id of its range may exist yet, made by
 * any instance, whose clock may run ahead of the database's: a partition never covers the present.
 */
export const PARTITION_LEAD_MS = 60_000;

/**
 * The partitions to make so that time is covered up to `now + ahead`, each `interval` long. They
 * follow the latest attached partition, and start at least `PARTITION_LEAD_MS` in the future:
 * when the latest ended before that (a first start, or no instance kept them up: every instance
 * was down, or partitions were off), they start at the first interval after it, aligned on the
 * epoch. What no partition covers lands in the default partition.
 */
export function partitionsToMake(
  attached: readonly TimePartition[],
  now: number,
  interval: number,
  ahead: number,
): TimePartition[] {
  const latest = Math.max(-Infinity, ...attached.map((partition) => partition.to));
  let from = Math.max(latest, Math.ceil((now + PARTITION_LEAD_MS) / interval) * interval);
  const made: TimePartition[] = [];
  while (from < now + ahead) {
    made.push({ name: partitionName(from), from, to: from + interval });
    from += interval;
  }
  return made;
}

/** How far a time partition is past `historyExpiration` (see `partitionAge`). */
export type PartitionAge = 'recent' | 'due' | 'overdue';

/**
 * A partition whose every id was made more than `expiration` ago is due: it is dropped whole once
 * nothing in it must be kept. One still held an interval (its own length) later is overdue: it
 * holds a row that outlives the rest (a job still running, a retry pending, a late end), so its
 * expired rows are deleted in batches, and it is dropped once its last row expires. The wait spares
 * a mass DELETE of the jobs that merely ended shortly after the partition's end.
 */
export function partitionAge(
  partition: TimePartition,
  now: number,
  expiration: number,
): PartitionAge {
  if (partition.to + expiration > now) return 'recent';
  return partition.to + expiration + (partition.to - partition.from) <= now ? 'overdue' : 'due';
}
