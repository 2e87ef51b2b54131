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
}

/** How many placeholders `filterSql` takes. */
export const FILTER_PARAMETERS = 6;

/** The filter's values, in the order `filterSql`'s placeholders take them. */
export function filterValues(filter: FilterValues): unknown[] {
  return [
    filter.task,
    filter.queue,
    filter.groupKey,
    filter.createdAfter,
    filter.createdBefore,
    filter.errorPattern,
  ];
}

/**
 * The one place a job filter becomes SQL, for the bulk calls (`retryJobs`, `cancelJobs`) and the
 * admin API's search alike, so that a search's count is what a bulk action on it takes. Conditions
 * on a row of `table` aliased `alias`, the filter's values at `$first` to `$first + 5`.
 *
 * A job's last error is in its history row: a queued job's is its previous attempt's, looked up by
 * primary key. Statements run unprepared (custom plans), so a `$n IS NULL` of an absent field folds
 * away at planning, and with it the condition.
 */
export function filterSql(
  schema: string,
  alias: string,
  table: 'jobs' | 'jobHistory',
  first: number,
): string {
  const [task, queue, groupKey, after, before, error] = Array.from(
    { length: FILTER_PARAMETERS },
    (_, i) => `$${first + i}`,
  );
  const errorMatches =
    table === 'jobHistory'
      ? `${alias}."lastErrorMessage" ILIKE ${error}`
      : `EXISTS (SELECT 1 FROM ${schema}."jobHistory" e
                 WHERE e.id = ${alias}.id AND e."lastErrorMessage" ILIKE ${error})`;
  return `(${task}::text IS NULL OR ${alias}.task = ${task})
    AND (${queue}::text IS NULL OR ${alias}.queue = ${queue})
    AND (${groupKey}::text IS NULL OR ${alias}."groupKey" = ${groupKey})
    AND (${after}::timestamptz IS NULL OR ${alias}."createdAt" >= ${after})
    AND (${before}::timestamptz IS NULL OR ${alias}."createdAt" < ${before})
    AND (${error}::text IS NULL OR ${errorMatches})`;
}

/** An ILIKE pattern that matches `text` anywhere, its `%`, `_` and `\` taken literally. */
export function errorPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, '\\$&')}%`;
}
