import type { JobsDatabase } from '../database/jobs-database.js';
import type { JobDependencies, JobDependency } from '../discovery/job-task.interfaces.js';
import { flowsSql } from './flows.sql.js';

/** A dependency as `dependenciesOf` reads it: a completed one's result still JSON text. */
interface DependencyRow {
  readonly ref: string;
  readonly id: string;
  readonly state: JobDependency['state'];
  readonly result: string | null;
  readonly error: string | null;
}

/** Reads what `ctx.dependencies()` gives: a flow job's direct dependencies, by ref. */
export class DependencyReader {
  private readonly statement;

  constructor(private readonly db: JobsDatabase) {
    this.statement = flowsSql(db.schema).dependenciesOf;
  }

  /** A job of no flow has none: it costs no query. */
  async read(job: { readonly id: string; readonly inFlow: boolean }): Promise<JobDependencies> {
    if (!job.inFlow) return {};
    const rows = await this.db.query<DependencyRow>(
      this.statement,
      this.statement.values({ id: job.id }),
    );
    return Object.fromEntries(rows.map((row) => [row.ref, dependencyOf(row)]));
  }
}

function dependencyOf({ id, state, result, error }: DependencyRow): JobDependency {
  if (state === 'completed') {
    return result === null ? { id, state } : { id, state, result: JSON.parse(result) as unknown };
  }
  return { id, state, error };
}
