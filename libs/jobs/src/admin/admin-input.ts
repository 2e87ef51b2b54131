import { JOB_ID_PATTERN, NAME_PATTERN, NAME_RULE } from '../common/names.js';
import { BadRequestException } from '@nestjs/common';
import type { JobState } from '../queue/job-info.interface.js';

/** What `GET api/jobs` accepts, validated. */
export interface JobListQuery {
  readonly state?: JobState;
  readonly task?: string;
  readonly limit: number;
  readonly offset: number;
}

export const JOB_STATES: readonly JobState[] = [
  'pending',
  'active',
  'completed',
  'failed',
  'interrupted',
  'cancelled',
  'skipped',
];
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;
const MAX_OFFSET = 100_000;
const MAX_MINUTES = 1440;
/** The window of `GET stats`' counts of ended jobs, and of the throughput chart, by default. */
export const DEFAULT_STATS_MINUTES = 60;

/**
 * Parsers of the admin API's input. Each rejects with a 400 whose message names the parameter,
 * the value and what is accepted, so a typo in a query string never reaches SQL or passes silently.
 */
export function parseJobId(value: unknown): string {
  if (typeof value !== 'string' || !JOB_ID_PATTERN.test(value)) {
    throw bad(`"id" must be a job id (a UUID); got ${show(value)}`);
  }
  return value.toLowerCase();
}

export function parseQueueName(value: unknown): string {
  if (typeof value !== 'string' || !NAME_PATTERN.test(value)) {
    throw bad(`"name" must be a queue name (${NAME_RULE}); got ${show(value)}`);
  }
  return value;
}

export function parseJobListQuery(query: Record<string, unknown>): JobListQuery {
  onlyKeys(query, ['state', 'task', 'limit', 'offset']);
  const { state, task } = query;
  if (state !== undefined && !JOB_STATES.includes(state as JobState)) {
    throw bad(`"state" must be one of ${JOB_STATES.join(', ')}; got ${show(state)}`);
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
