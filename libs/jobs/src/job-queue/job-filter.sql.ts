/**
 * A job filter's values as its SQL takes them, in the order of its placeholders (`filterValues`);
 * `null` matches any job.
 */
export interface FilterValues {
  readonly task: string | null;
  readonly queue: string | null;
  readonly groupKey: string | null;
  /** Created at or after. */
  readonly createdAfter: Date | null;
  /** Created before. */
  readonly createdBefore: Date | null;
  /** An ILIKE pattern of the last error (`errorPattern`). */
  readonly errorPattern: string | null;
  /** The job's unique key, exactly. */
  readonly uniqueKey: string | null;
}

/** How many placeholders `filterSql` takes. */
const FILTER_PARAMETERS = 7;

/** The filter's values, in the order `filterSql`'s placeholders take them. */
export function filterValues(filter: FilterValues): unknown[] {
  return [
    filter.task,
    filter.queue,
    filter.groupKey,
    filter.createdAfter,
    filter.createdBefore,
    filter.errorPattern,
    filter.uniqueKey,
  ];
}

/**
 * The one place a job filter becomes SQL, for the bulk calls (`retryJobs`, `cancelJobs`) and the
 * admin API's search alike, so that a search's count is what a bulk action on it takes. Conditions
 * on a row of `table` aliased `alias`, the filter's values at `$first` to `$first + 6`.
 *
 * A job's last error is in its history row: a queued job's is its previous attempt's, looked up by
 * primary key, for the jobs queued again alone (`"queuedAgain"`, jobs_queued_again: a job just
 * added has no history). So is its unique key once it has run: the queue keeps a key only until
 * the job's first claim (it frees itself then), history keeps it from that claim on; a job queued
 * again (a retry, a snooze) is found through its history row, by job_history_unique_key then the
 * queue's primary key, and one never claimed by jobs_unique_key. Statements run unprepared (custom
 * plans), so a `$n IS NULL` of an absent field folds away at planning, and with it the condition.
 */
export function filterSql(
  schema: string,
  alias: string,
  table: 'jobs' | 'jobHistory',
  first: number,
): string {
  const [task, queue, groupKey, after, before, error, uniqueKey] = Array.from(
    { length: FILTER_PARAMETERS },
    (_, i) => `$${first + i}`,
  );
  const errorMatches =
    table === 'jobHistory'
      ? `${alias}."lastErrorMessage" ILIKE ${error}`
      : `${alias}."queuedAgain" AND EXISTS (SELECT 1 FROM ${schema}."jobHistory" e
                 WHERE e.id = ${alias}.id AND e."lastErrorMessage" ILIKE ${error})`;
  const keyMatches =
    table === 'jobHistory'
      ? `${alias}."uniqueKey" = ${uniqueKey}`
      : `(${alias}."uniqueKey" = ${uniqueKey}
         OR ${alias}.id = ANY(ARRAY(SELECT k.id FROM ${schema}."jobHistory" k WHERE k."uniqueKey" = ${uniqueKey})))`;
  return `(${task}::text IS NULL OR ${alias}.task = ${task})
    AND (${queue}::text IS NULL OR ${alias}.queue = ${queue})
    AND (${groupKey}::text IS NULL OR ${alias}."groupKey" = ${groupKey})
    AND (${after}::timestamptz IS NULL OR ${alias}."createdAt" >= ${after})
    AND (${before}::timestamptz IS NULL OR ${alias}."createdAt" < ${before})
    AND (${error}::text IS NULL OR ${errorMatches})
    AND (${uniqueKey}::text IS NULL OR ${keyMatches})`;
}

/** An ILIKE pattern that matches `text` anywhere, its `%`, `_` and `\` taken literally. */
export function errorPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, '\\$&')}%`;
}

/**
 * Whether the job of `alias`, a `jobHistory` row, is not queued again (by a retry or a snooze): a
 * history row of a queued job describes its attempt before, and lists and bulk calls take it as
 * the queued job it is. One primary-key probe per row read, kept so by OFFSET 0: without it
 * PostgreSQL plans an anti-join, and once the queue holds more jobs than the history rows it
 * expects to check, it expects every row to be queued again and reads and sorts a whole state
 * instead of walking its index to the page or the batch (admin-plans.spec.ts holds it).
 */
export function notQueuedAgain(schema: string, alias: string): string {
  return `NOT EXISTS (SELECT 1 FROM ${schema}.jobs q WHERE q.id = ${alias}.id OFFSET 0)`;
}
