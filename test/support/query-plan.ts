import pg from 'pg';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { runnerSql } from '../../libs/jobs/src/runner/runner.sql.js';
import type { TestDatabase } from './test-database.js';

/** One node of `EXPLAIN (FORMAT JSON)`, with the fields plan tests look at. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  /** With `ANALYZE` (`executedPlanNodes`): the rows it returned per loop, and its loops. */
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/**
 * Every node of the plan PostgreSQL chooses for `text` with `values` bound (as the library sends
 * them, so the planner sees the actual parameters), flattened: a test asserts on what it finds.
 * `settings` (a `SET LOCAL` the library runs before the statement, in its transaction) apply to
 * the planning too.
 */
export async function planNodes(
  db: TestDatabase,
  text: string,
  values: unknown[],
  settings?: string,
): Promise<PlanNode[]> {
  const explain = `EXPLAIN (FORMAT JSON) ${text}`;
  if (settings === undefined) {
    const [{ 'QUERY PLAN': explained }] = await db.query<Explained>(explain, values);
    return flatten(explained[0].Plan);
  }
  return explainRolledBack(db, explain, values, settings);
}

/**
 * Every node of the plan `text` ran with, its actual rows and loops (`EXPLAIN ANALYZE`), flattened:
 * the statement runs in a transaction that is rolled back, so what it writes is undone.
 */
export function executedPlanNodes(
  db: TestDatabase,
  text: string,
  values: unknown[],
): Promise<PlanNode[]> {
  return explainRolledBack(db, `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values);
}

type Explained = { 'QUERY PLAN': [{ Plan: PlanNode }] };

async function explainRolledBack(
  db: TestDatabase,
  explain: string,
  values: unknown[],
  settings?: string,
): Promise<PlanNode[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    await client.query('BEGIN');
    if (settings !== undefined) await client.query(settings);
    const { rows } = await client.query<Explained>(explain, values);
    return flatten(rows[0]['QUERY PLAN'][0].Plan);
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    await client.end();
  }
}

function flatten(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(flatten)];
}

/**
 * The plan of the runner's shared claim (schema `jobs`) of up to 50 jobs of the task `record` in
 * the default queue, with its parameters bound as the runner binds them.
 */
export function planOfClaim(db: TestDatabase): Promise<PlanNode[]> {
  const { claim } = runnerSql(toSchemaName('jobs'));
  return planNodes(
    db,
    claim.text,
    claim.values({ limit: 50, executedBy: 'planner-test', tasks: ['record'], queues: ['default'] }),
  );
}

/**
 * `nodes` with the default partition of `jobHistory` and its indexes under the parent's names
 * (`jobHistory_default` as `jobHistory`, `job_history_active_default` as `job_history_active`):
 * rows of random (version 4) ids, as plan tests write them, are all there, and a plan that reads
 * history reads them through that partition's indexes (migration 13).
 */
export function withParentNames(nodes: PlanNode[]): PlanNode[] {
  const parent = (name: string | undefined) =>
    name === undefined
      ? undefined
      : name === 'jobHistory_default_pkey'
        ? 'jobHistory_pkey'
        : name
            .replace(/^jobHistory_default$/, 'jobHistory')
            .replace(/^(job_history_\w+)_default$/, '$1');
  return nodes.map((node) => ({
    ...node,
    ...(node['Relation Name'] && { 'Relation Name': parent(node['Relation Name']) }),
    ...(node['Index Name'] && { 'Index Name': parent(node['Index Name']) }),
  }));
}
