import { JOB_ID_PATTERN, NAME_PATTERN, NAME_RULE } from '../common/names.js';
import { BadRequestException } from '@nestjs/common';
import { isQueuedState, JOB_STATES } from '../common/job-states.js';
import type { JobState } from '../job-queue/job-info.interface.js';
import type { JobFilter } from '../job-queue/job-filter.interface.js';
import { MAX_ERROR_FILTER } from '../job-queue/validate-queue-calls.js';

/**
 * A search of jobs (`GET api/jobs`, `GET api/jobs/count`), validated: each field narrows, `null`
 * takes any job. The fields of the bulk calls' filter (`JobFilter`), an id and a flow.
 *
 * @publicApi
 */
export interface JobSearch {
  readonly task: string | null;
  readonly queue: string | null;
  readonly groupKey: string | null;
  /** The job's unique key (`AddJobOptions.uniqueKey`), exactly. */
  readonly uniqueKey: string | null;
  /** Text the job's last error contains, in any case. */
  readonly error: string | null;
  /** Enqueued at or after this time. */
  readonly after: Date | null;
  /** Enqueued before this time. */
  readonly before: Date | null;
  /** A job id or its start, in lower case, as a UUID is written (`0193a4f2-7b`). */
  readonly idPrefix: string | null;
  readonly flowId: string | null;
}

/** The fields a search shares with the bulk calls' filter. */
type FilterFields = Pick<
  JobSearch,
  'task' | 'queue' | 'groupKey' | 'uniqueKey' | 'error' | 'after' | 'before'
>;

/**
 * Where the next page of a list starts: after the last row listed, by the list's order. A
 * queued list is in claim order (priority, due time, sequence), every other latest first.
 *
 * @publicApi
 */
export type JobListCursor =
  | { readonly at: string; readonly id: string }
  | { readonly priority: number; readonly waitUntil: string; readonly seq: string };

/** What `GET api/jobs` accepts, validated. */
export interface JobListQuery {
  readonly state?: JobState;
  readonly search: JobSearch;
  readonly limit: number;
  readonly offset: number;
  readonly cursor: JobListCursor | null;
}

/** What `GET api/jobs/count` accepts, validated. @publicApi */
export interface JobCountQuery {
  readonly state?: JobState;
  readonly search: JobSearch;
}

/** What `GET api/flows` accepts, validated. */
export interface FlowListQuery {
  readonly limit: number;
  readonly offset: number;
}

/**
 * The states a list can be asked for: `snoozed` names an attempt in history, never a job (a
 * snoozed job is `pending` again), so no job is listed under it.
 */
export const LISTED_STATES: readonly JobState[] = JOB_STATES.filter((state) => state !== 'snoozed');
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;
/** Fewer flows than jobs to a page: each listed flow reads the states of all its jobs. */
const DEFAULT_FLOW_LIMIT = 20;
const MAX_FLOW_LIMIT = 100;
const MAX_OFFSET = 100_000;
const MAX_MINUTES = 1440;
/** The window of `GET stats`' counts of ended jobs, and of the throughput chart, by default. */
export const DEFAULT_STATS_MINUTES = 60;

/**
 * Parsers of the admin API's input. Each rejects with a 400 whose message names the parameter,
 * the value and what is accepted, so a typo in a query string never reaches SQL or passes silently.
 */
export function parseJobId(value: unknown): string {
  return parseId('job', value);
}

export function parseFlowId(value: unknown): string {
  return parseId('flow', value);
}

function parseId(kind: 'job' | 'flow', value: unknown, parameter = 'id'): string {
  if (typeof value !== 'string' || !JOB_ID_PATTERN.test(value)) {
    throw bad(`"${parameter}" must be a ${kind} id (a UUID); got ${show(value)}`);
  }
  return value.toLowerCase();
}

export function parseScheduleName(value: unknown): string {
  return parseName('schedule', value);
}

export function parseQueueName(value: unknown): string {
  return parseName('queue', value);
}

function parseName(kind: 'schedule' | 'queue', value: unknown, parameter = 'name'): string {
  if (typeof value !== 'string' || !NAME_PATTERN.test(value)) {
    throw bad(`"${parameter}" must be a ${kind} name (${NAME_RULE}); got ${show(value)}`);
  }
  return value;
}

/** The parameters of a search, with the state: those of `GET api/jobs` and `GET api/jobs/count`. */
const SEARCH_KEYS = [
  'state',
  'task',
  'queue',
  'groupKey',
  'uniqueKey',
  'id',
  'flow',
  'error',
  'after',
  'before',
];

export function parseJobListQuery(query: Record<string, unknown>): JobListQuery {
  onlyKeys(query, [...SEARCH_KEYS, 'limit', 'offset', 'cursor']);
  const state = parseListedState(query.state);
  return {
    state,
    search: parseSearch(query),
    limit: integer(query, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT),
    offset: integer(query, 'offset', 0, 0, MAX_OFFSET),
    cursor: query.cursor === undefined ? null : parseCursor(query.cursor, state),
  };
}

export function parseJobCountQuery(query: Record<string, unknown>): JobCountQuery {
  onlyKeys(query, SEARCH_KEYS);
  return { state: parseListedState(query.state), search: parseSearch(query) };
}

function parseListedState(state: unknown): JobState | undefined {
  if (state !== undefined && !LISTED_STATES.includes(state as JobState)) {
    throw bad(`"state" must be one of ${LISTED_STATES.join(', ')}; got ${show(state)}`);
  }
  return state as JobState | undefined;
}

function parseSearch(query: Record<string, unknown>): JobSearch {
  const { id, flow } = query;
  if (id !== undefined && (typeof id !== 'string' || !isIdPrefix(id))) {
    throw bad(`"id" must be a job id or its start, such as 0193a4f2-7b; got ${show(id)}`);
  }
  return {
    ...parseFilterFields(query),
    idPrefix: typeof id === 'string' ? id.toLowerCase() : null,
    flowId: flow === undefined ? null : parseId('flow', flow, 'flow'),
  };
}

const UUID_SHAPE = 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx';

/** The start of a UUID as it is written: hex digits, with its dashes where a UUID has them. */
function isIdPrefix(value: string): boolean {
  return (
    value.length >= 1 &&
    value.length <= UUID_SHAPE.length &&
    [...value].every((char, i) =>
      UUID_SHAPE[i] === '-' ? char === '-' : /^[0-9a-fA-F]$/.test(char),
    )
  );
}

/** A time as PostgreSQL writes a timestamptz as text (the cursors hold the database's own). */
const DATABASE_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}(:\d{2}){0,2}$/;

/** A cursor is the base64url of its JSON, given by the previous page as `next`; opaque to callers. */
export function encodeCursor(cursor: JobListCursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

function parseCursor(value: unknown, state: JobState | undefined): JobListCursor {
  const invalid = () =>
    bad(`"cursor" must be the "next" of a page of the same list; got ${show(value)}`);
  if (typeof value !== 'string' || value.length > 300) throw invalid();
  let cursor: Record<string, unknown>;
  try {
    cursor = JSON.parse(Buffer.from(value, 'base64url').toString());
  } catch {
    throw invalid();
  }
  if (typeof cursor !== 'object' || cursor === null) throw invalid();
  if (state !== undefined && isQueuedState(state)) {
    const { priority, waitUntil, seq } = cursor;
    if (
      !Number.isInteger(priority) ||
      typeof waitUntil !== 'string' ||
      !(waitUntil === 'infinity' || DATABASE_TIME.test(waitUntil)) ||
      typeof seq !== 'string' ||
      !/^\d{1,19}$/.test(seq)
    ) {
      throw invalid();
    }
    return { priority: priority as number, waitUntil, seq };
  }
  const { at, id } = cursor;
  if (typeof at !== 'string' || !DATABASE_TIME.test(at) || typeof id !== 'string') throw invalid();
  if (!JOB_ID_PATTERN.test(id)) throw invalid();
  return { at, id };
}

export function parseFlowListQuery(query: Record<string, unknown>): FlowListQuery {
  onlyKeys(query, ['limit', 'offset']);
  return {
    limit: integer(query, 'limit', DEFAULT_FLOW_LIMIT, 1, MAX_FLOW_LIMIT),
    offset: integer(query, 'offset', 0, 0, MAX_OFFSET),
  };
}

/**
 * The filter of a bulk retry, cancel or delete: the fields of a search but the id and the flow
 * (see `parseFilterFields`), and `state`: one of `states`, or several separated by commas.
 */
export function parseJobFilter<State extends JobState>(
  query: Record<string, unknown>,
  states: readonly State[],
): JobFilter<State> {
  onlyKeys(query, FILTER_KEYS);
  const { state } = query;
  const listed = typeof state === 'string' ? state.split(',') : [];
  if (state !== undefined && !listed.every((one) => states.includes(one as State))) {
    throw bad(
      `"state" must be one or more of ${states.join(', ')}, separated by commas; got ${show(state)}`,
    );
  }
  const fields = parseFilterFields(query);
  // The fields given, without the nulls of those that were not.
  const given = Object.entries(fields).filter(([, value]) => value !== null);
  return {
    ...(Object.fromEntries(given) as Omit<JobFilter<State>, 'state'>),
    ...(state !== undefined && { state: listed as State[] }),
  };
}

const FILTER_KEYS = ['task', 'queue', 'groupKey', 'uniqueKey', 'state', 'before', 'after', 'error'];

/**
 * The fields a search and a bulk call share: `task`, `queue`, `groupKey`, `uniqueKey` (exactly),
 * `error` (text its last error contains), `after` and `before` (ISO 8601 times, of its creation).
 */
function parseFilterFields(query: Record<string, unknown>): FilterFields {
  const { task, queue, groupKey, uniqueKey, error } = query;
  if (task !== undefined && (typeof task !== 'string' || !NAME_PATTERN.test(task))) {
    throw bad(`"task" must be a task name (${NAME_RULE}); got ${show(task)}`);
  }
  if (queue !== undefined) parseName('queue', queue, 'queue');
  for (const [name, value] of Object.entries({ groupKey, error })) {
    if (value !== undefined && (typeof value !== 'string' || !TEXT_FILTER.test(value))) {
      throw bad(
        `"${name}" must be text of 1 to ${MAX_ERROR_FILTER} characters; got ${show(value)}`,
      );
    }
  }
  if (uniqueKey !== undefined && (typeof uniqueKey !== 'string' || !KEY_FILTER.test(uniqueKey))) {
    throw bad(
      `"uniqueKey" must be a key of 1 to ${MAX_KEY_FILTER} characters; got ${show(uniqueKey)}`,
    );
  }
  return {
    task: (task as string | undefined) ?? null,
    queue: (queue as string | undefined) ?? null,
    groupKey: (groupKey as string | undefined) ?? null,
    uniqueKey: (uniqueKey as string | undefined) ?? null,
    error: (error as string | undefined) ?? null,
    after: parseTime(query, 'after'),
    before: parseTime(query, 'before'),
  };
}

const TEXT_FILTER = new RegExp(`^[^\\u0000]{1,${MAX_ERROR_FILTER}}$`, 'u');
/**
 * The longest unique key a search takes: keys are not capped at enqueue, but one much longer would
 * not fit the key's index entry (a B-tree entry holds at most about 2,700 bytes) in the first place.
 */
const MAX_KEY_FILTER = 1000;
const KEY_FILTER = new RegExp(`^[^\\u0000]{1,${MAX_KEY_FILTER}}$`, 'u');

function parseTime(query: Record<string, unknown>, name: string): Date | null {
  const value = query[name];
  if (value === undefined) return null;
  const time = typeof value === 'string' && ISO_TIME.test(value) ? new Date(value) : undefined;
  if (!(time && !Number.isNaN(time.getTime()))) {
    throw bad(
      `"${name}" must be an ISO 8601 time such as 2026-01-31T12:00:00Z; got ${show(value)}`,
    );
  }
  return time;
}

/** A date and time with its offset: a time without one would be read in the server's zone. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

export function parseMinutes(query: Record<string, unknown>): number {
  onlyKeys(query, ['minutes']);
  return integer(query, 'minutes', DEFAULT_STATS_MINUTES, 1, MAX_MINUTES);
}

export function parseNoQuery(query: Record<string, unknown>): void {
  onlyKeys(query, []);
}

function integer(
  query: Record<string, unknown>,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = query[name];
  if (raw === undefined) return fallback;
  const value = typeof raw === 'string' && /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= min && value <= max)) {
    throw bad(`"${name}" must be an integer from ${min} to ${max}; got ${show(raw)}`);
  }
  return value;
}

function onlyKeys(query: Record<string, unknown>, allowed: readonly string[]): void {
  const unknown = Object.keys(query ?? {}).filter((key) => !allowed.includes(key));
  if (unknown.length > 0) {
    throw bad(
      `unknown query parameter ${show(unknown[0])}; accepted: ${allowed.join(', ') || 'none'}`,
    );
  }
}

function show(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 100)) : JSON.stringify(value);
}

function bad(message: string): BadRequestException {
  return new BadRequestException(`Invalid request: ${message}.`);
}
