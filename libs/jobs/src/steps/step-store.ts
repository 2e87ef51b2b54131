import type { StatementText } from '../database/sql-statement.js';
import { StatementBatcher } from '../database/statement-batcher.js';
import type { BatchedWrite } from '../database/statement-batcher.js';
import type { StepFence, StepRow, StepsSql } from './steps.sql.js';

/** A checkpoint as one write records it (`StepStore.write`). */
export interface StepWrite {
  readonly name: string;
  readonly position: number;
  readonly state: 'running' | 'completed' | 'failed';
  /** JSON text; `null` for nothing. */
  readonly value: string | null;
  readonly error: string | null;
  readonly startedAt: Date;
}

/** Where one of the jobs `ctx.waitForJobs` waits for is (`StepStore.jobOutcomes`). */
export interface OutcomeRow {
  readonly id: string;
  readonly queued: boolean;
  readonly state: string | null;
  readonly result: string | null;
  readonly error: string | null;
}

/**
 * What durable steps read and write: the database on the main thread (`DatabaseStepStore`), the
 * main thread's store for a pool thread (`worker-pool/thread-step-store.ts`). Plain data in and
 * out, so that a thread's calls can be messages.
 */
export interface StepStore {
  /** Every checkpoint of the job, and the database's clock (epoch ms). */
  load(fence: StepFence): Promise<{ rows: StepRow[]; now: number }>;
  /** Writes a checkpoint if the attempt still holds its job; `false` when fenced out. */
  write(fence: StepFence, step: StepWrite): Promise<boolean>;
  /** Event `name`'s payload (JSON text, `null` for none), or `undefined` when it was not sent. */
  findEvent(name: string): Promise<{ payload: string | null } | undefined>;
  jobOutcomes(ids: readonly string[]): Promise<OutcomeRow[]>;
}

/** What a store needs of the database: one statement, its rows. */
export interface StepQueries {
  query<Row>(statement: StatementText, values: readonly unknown[]): Promise<Row[]>;
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Orders writes by their row's key (job, then name); the sort is stable: one step's writes keep their order. */
const compareKeys = (a: PendingStepWrite, b: PendingStepWrite) =>
  byText(a.fence.id, b.fence.id) || byText(a.step.name, b.step.name);

/** A checkpoint waiting for its write. */
class PendingStepWrite implements BatchedWrite {
  constructor(
    readonly fence: StepFence,
    readonly step: StepWrite,
    readonly resolve: (recorded: boolean) => void,
    readonly reject: (err: unknown) => void,
  ) {}
}

/**
 * The steps' statements (`steps.sql.ts`) on the library's database. The checkpoints of steps that
 * end together, in many jobs, are written in one statement (`StatementBatcher`): a step's write is
 * a commit, and a commit per step was what a task of quick steps waited on.
 */
export class DatabaseStepStore implements StepStore {
  private readonly writes: StatementBatcher<PendingStepWrite>;

  constructor(
    private readonly db: StepQueries,
    private readonly sql: StepsSql,
  ) {
    this.writes = new StatementBatcher((batch) => this.writeBatch(batch), compareKeys);
  }

  async load(fence: StepFence): Promise<{ rows: StepRow[]; now: number }> {
    const { loadSteps } = this.sql;
    const rows = await this.db.query<StepRow & { now: number }>(loadSteps, loadSteps.values(fence));
    return { rows, now: rows.length > 0 ? Number(rows[0].now) : Date.now() };
  }

  write(fence: StepFence, step: StepWrite): Promise<boolean> {
    return new Promise((resolve, reject) =>
      this.writes.add(new PendingStepWrite(fence, step, resolve, reject)),
    );
  }

  private async writeBatch(batch: readonly PendingStepWrite[]): Promise<void> {
    const { writeSteps } = this.sql;
    const rows = await this.db.query<{ id: string; name: string }>(
      writeSteps,
      writeSteps.values(batch),
    );
    const written = new Set(rows.map((row) => `${row.id} ${row.name}`));
    for (const entry of batch) entry.resolve(written.has(`${entry.fence.id} ${entry.step.name}`));
  }

  async findEvent(name: string): Promise<{ payload: string | null } | undefined> {
    const { findEvent } = this.sql;
    return (
      await this.db.query<{ payload: string | null }>(findEvent, findEvent.values({ name }))
    )[0];
  }

  jobOutcomes(ids: readonly string[]): Promise<OutcomeRow[]> {
    const { jobOutcomes } = this.sql;
    return this.db.query<OutcomeRow>(jobOutcomes, jobOutcomes.values({ ids }));
  }
}
