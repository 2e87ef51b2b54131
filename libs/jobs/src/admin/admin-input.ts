import { JOB_ID_PATTERN, NAME_PATTERN, NAME_RULE } from '../common/names.js';
import { BadRequestException } from '@nestjs/common';
import { JOB_STATES } from '../common/job-states.js';
import type { JobState } from '../job-queue/job-info.interface.js';
import type { JobFilter } from '../job-queue/job-filter.interface.js';

/** What `GET api/jobs` accepts, validated. */
export interface JobListQuery {
  readonly state?: JobState;
  readonly task?: string;
  readonly limit: number;
  readonly offset: number;
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

function parseId(kind: 'job' | 'flow', value: unknown): string {
  if (typeof value !== 'string' || !JOB_ID_PATTERN.test(value)) {
    throw bad(`"id" must be a ${kind} id (a UUID); got ${show(value)}`);
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

export function parseJobListQuery(query: Record<string, unknown>): JobListQuery {
  onlyKeys(query, ['state', 'task', 'limit', 'offset']);
  const { state, task } = query;
  if (state !== undefined && !LISTED_STATES.includes(state as JobState)) {
    throw bad(`"state" must be one of ${LISTED_STATES.join(', ')}; got ${show(state)}`);
  }
  if (task !== undefined && (typeof task !== 'string' || !NAME_PATTERN.test(task))) {
    throw bad(`"task" must be a task name (${NAME_RULE}); got ${show(task)}`);
  }
  return {
    state: state as JobState | undefined,
    task: task as string | undefined,
    limit: integer(query, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT),
    offset: integer(query, 'offset', 0, 0, MAX_OFFSET),
  };
}

export function parseFlowListQuery(query: Record<string, unknown>): FlowListQuery {
  onlyKeys(query, ['limit', 'offset']);
  return {
    limit: integer(query, 'limit', DEFAULT_FLOW_LIMIT, 1, MAX_FLOW_LIMIT),
    offset: integer(query, 'offset', 0, 0, MAX_OFFSET),
  };
}

/**
 * The filter of a bulk retry or cancel: `task`, `queue`, `state` (one of `states`, or several
 * separated by commas) and `before` (an ISO 8601 time).
 */
export function parseJobFilter<State extends JobState>(
  query: Record<string, unknown>,
  states: readonly State[],
): JobFilter<State> {
  onlyKeys(query, ['task', 'queue', 'state', 'before']);
  const { task, queue, state, before } = query;
  if (task !== undefined && (typeof task !== 'string' || !NAME_PATTERN.test(task))) {
    throw bad(`"task" must be a task name (${NAME_RULE}); got ${show(task)}`);
  }
  if (queue !== undefined) parseName('queue', queue, 'queue');
  const listed = typeof state === 'string' ? state.split(',') : [];
  if (state !== undefined && !listed.every((one) => states.includes(one as State))) {
    throw bad(
      `"state" must be one or more of ${states.join(', ')}, separated by commas; got ${show(state)}`,
    );
  }
  const time = typeof before === 'string' && ISO_TIME.test(before) ? new Date(before) : undefined;
  if (before !== undefined && !(time && !Number.isNaN(time.getTime()))) {
    throw bad(
      `"before" must be an ISO 8601 time such as 2026-01-31T12:00:00Z; got ${show(before)}`,
    );
  }
  return {
    ...(task !== undefined && { task: task as string }),
    ...(queue !== undefined && { queue: queue as string }),
    ...(state !== undefined && { state: listed as State[] }),
    ...(time && { before: time }),
  };
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
