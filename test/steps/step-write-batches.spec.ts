import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

/** Opens the steps waiting at it, all in one turn of the event loop. */
let openGate!: () => void;
let gate = new Promise<void>((resolve) => (openGate = resolve));
let arrived = 0;

/** One step that ends when the gate opens, named as the payload says. */
@JobTask({ name: 'batches.gated', maxRetries: 0 })
@Injectable()
class GatedStepTask implements JobTaskHandler<{ step: string }, string> {
  async run({ step }: { step: string }, ctx: JobContext) {
    return ctx.step(step, async () => {
      arrived++;
      await gate;
      return `${step}@${ctx.id}`;
    });
  }
}

let app: JobsApp;

beforeAll(async () => {
  app = await startJobsApp(db.url, { tasks: [GatedStepTask], options: { concurrency: 20 } });
});

beforeEach(() => {
  gate = new Promise<void>((resolve) => (openGate = resolve));
  arrived = 0;
});

/** Runs `steps` jobs, one gated step each, and opens the gate once all of them wait at it. */
async function stepsEndingTogether(steps: readonly string[]): Promise<string[]> {
  const jobs = await app.queue.addJobs(
    steps.map((step) => ({ task: 'batches.gated', payload: { step } })),
  );
  await waitFor('every step to wait at the gate', () => arrived === steps.length);
  openGate();
  const ids = jobs.map((job) => job.id);
  await waitFor('every job to end', async () => {
    const [{ n }] = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs."jobHistory"
       WHERE id = ANY($1::uuid[]) AND state IN ('completed', 'failed')`,
      [ids],
    );
    return n === ids.length;
  });
  return ids;
}

it('writes the checkpoints of steps that end together, in many jobs, in one statement', async () => {
  const ids = await stepsEndingTogether(Array.from({ length: 20 }, () => 'load'));
  const rows = await db.query<{ jobId: string; value: string; tx: string }>(
    `SELECT "jobId", value #>> '{}' AS value, xmin::text AS tx
     FROM jobs."jobStep" WHERE "jobId" = ANY($1::uuid[])`,
    [ids],
  );
  expect(rows.map((row) => row.value).sort()).toEqual(ids.map((id) => `load@${id}`).sort());
  // A transaction per statement: twenty writes of their own would be twenty transactions.
  expect(new Set(rows.map((row) => row.tx)).size).toBeLessThanOrEqual(3);
});

it('records the rest of a batch that PostgreSQL refuses one checkpoint of, and fails that step alone', async () => {
  await db.query(
    `ALTER TABLE jobs."jobStep" ADD CONSTRAINT refuses_poison CHECK (name <> 'poison')`,
  );
  try {
    const steps = ['load', 'load', 'poison', 'load', 'load'];
    const ids = await stepsEndingTogether(steps);
    const states = await Promise.all(ids.map(async (id) => (await app.queue.getJob(id))!));
    expect(states.map((job) => job.state)).toEqual([
      'completed',
      'completed',
      'failed',
      'completed',
      'completed',
    ]);
    expect(states[2].lastErrorMessage).toMatch(/refuses_poison/);
    const written = await db.query<{ jobId: string }>(
      `SELECT "jobId" FROM jobs."jobStep" WHERE "jobId" = ANY($1::uuid[])`,
      [ids],
    );
    expect(written.map((row) => row.jobId).sort()).toEqual(
      ids.filter((_, i) => steps[i] !== 'poison').sort(),
    );
  } finally {
    await db.query(`ALTER TABLE jobs."jobStep" DROP CONSTRAINT refuses_poison`);
  }
});
