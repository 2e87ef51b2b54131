import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import type { SqlStatement } from '../../libs/jobs/src/database/sql-statement.js';
import { queueSql } from '../../libs/jobs/src/job-queue/job-queue.sql.js';
import { reaperSql } from '../../libs/jobs/src/reaper/reaper.sql.js';
import { runnerSql } from '../../libs/jobs/src/runner/runner.sql.js';

/**
 * Every binder builds exactly the values its statement's text asks for: `pg` refuses a statement
 * sent with too few or too many, but only once that statement runs, and some (a lost claim's
 * orphans, a refused ending) run only on paths the other specs reach by chance.
 */

const schema = toSchemaName('jobs');
const statements = Object.entries({
  ...runnerSql(schema),
  ...queueSql(schema),
  ...reaperSql(schema),
}).filter((entry): entry is [string, SqlStatement<unknown>] => typeof entry[1] !== 'string');

/**
 * Parameters of any shape: every field is a one-element list of such parameters, so that a binder
 * can read a field, an element, a field of an element or map over a list.
 */
const anyParams: unknown = new Proxy(
  {},
  { get: (_target, field) => (field === 'then' ? undefined : [anyParams]) },
);

/** The highest `$n` of `text`: how many values PostgreSQL expects. */
const parameterCount = (text: string) =>
  Math.max(0, ...[...text.matchAll(/\$(\d+)/g)].map((match) => Number(match[1])));

it('covers every statement of several parameters', () => {
  expect(statements.map(([name]) => name)).toEqual(
    expect.arrayContaining([
      'claim',
      'claimLimitedByGroup',
      'fail',
      'insertJob',
      'insertJobs',
      'retryJobs',
      'reap',
    ]),
  );
});

it.each(statements)(
  '%s: its binder gives as many values as its text has parameters',
  (_name, statement) => {
    expect(statement.values(anyParams)).toHaveLength(parameterCount(statement.text));
  },
);
