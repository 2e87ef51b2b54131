import { Inject, Injectable } from '@nestjs/common';
import { JobQueueService, JobTask } from 'nestjs-pg-jobs';
import type { AddedFlow, JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
/** The flow each fan-out job added, by the fan-out job's id, as its task saw it. */
const added = new Map<string, AddedFlow>();

interface FanOutPayload {
  rows: number[];
  /** Throw once the flow is added: the task's transaction rolls back. */
  fail?: boolean;
}

/** Adds one job per row and a report after them all, in its own transaction. */
@JobTask({ name: 'dynamic.fanOut', transactional: true, maxRetries: 0 })
@Injectable()
class FanOutTask implements JobTaskHandler<FanOutPayload> {
  constructor(@Inject(JobQueueService) private readonly queue: JobQueueService) {}

  async run({ rows, fail }: FanOutPayload, ctx: JobContext) {
    const refs = rows.map((_, i) => `row-${i}`);
    const flow = await this.queue.addFlow({
      manager: ctx.manager,
      jobs: [
        ...rows.map((value, i) => ({ ref: refs[i], task: 'dynamic.row', payload: { value } })),
        { ref: 'report', task: 'dynamic.report', dependsOn: refs },
      ],
    });
    added.set(ctx.id, flow);
    if (fail) throw new Error('the import failed after its fan-out');
    return { report: flow.jobs.report };
  }
}

@JobTask('dynamic.row')
@Injectable()
class RowTask implements JobTaskHandler<{ value: number }, number> {
  run({ value }: { value: number }) {
    return value * 2;
  }
}

@JobTask('dynamic.report')
@Injectable()
class ReportTask implements JobTaskHandler<unknown, number> {
  async run(_payload: unknown, ctx: JobContext) {
    const rows = Object.values(await ctx.dependencies());
    return rows.reduce((total, row) => total + (row.result as number), 0);
  }
}

let app: JobsApp;

beforeAll(async () => {
  app = await startJobsApp(db.url, {
    tasks: [FanOutTask, RowTask, ReportTask],
    options: { pollingCheck: 0.2 },
  });
});

afterAll(() => app?.close());

it('adds a flow from a running transactional task, whose sink anyone can then await', async () => {
  const { id } = await app.queue.addJob({ task: 'dynamic.fanOut', payload: { rows: [1, 2, 3] } });
  const { report } = (await app.queue.waitForJob(id, { timeout: 30 })) as { report: string };
  expect(report).toBe(added.get(id)!.jobs.report);
  await expect(app.queue.waitForJob(report, { timeout: 30 })).resolves.toBe(12);
  const flow = await app.queue.getFlow(added.get(id)!.flowId);
  expect(flow!.jobs.map((job) => job.state)).toEqual([
    'completed',
    'completed',
    'completed',
    'completed',
  ]);
});

it('leaves no trace of the flow when the task that added it fails', async () => {
  const { id } = await app.queue.addJob({
    task: 'dynamic.fanOut',
    payload: { rows: [1, 2, 3], fail: true },
  });
  await expect(app.queue.waitForJob(id, { timeout: 30 })).rejects.toThrow(
    'the import failed after its fan-out',
  );
  const flow = await waitFor('the task to have added its flow', () => added.get(id));
  expect(await app.queue.getFlow(flow.flowId)).toBeNull();
  for (const jobId of Object.values(flow.jobs)) expect(await app.queue.getJob(jobId)).toBeNull();
  const [rows] = await db.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM jobs."jobFlowMember" WHERE "flowId" = $1)
          + (SELECT count(*) FROM jobs."jobDependency" WHERE "jobId" = ANY($2))
          + (SELECT count(*) FROM jobs.jobs WHERE id = ANY($2))
          + (SELECT count(*) FROM jobs."jobHistory" WHERE id = ANY($2)) AS n`,
    [flow.flowId, Object.values(flow.jobs)],
  );
  expect(Number(rows.n)).toBe(0);
});
