import { Injectable } from '@nestjs/common';
import {
  InvalidFlowError,
  JobCancelledError,
  JobTask,
  UnknownTaskError,
  UnrecoverableJobError,
} from 'nestjs-pg-jobs';
import type { JobContext, JobDependencies, JobTaskHandler } from 'nestjs-pg-jobs';
import { DataSource } from 'typeorm';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

/** What each run saw of its dependencies, by job id. */
const seen = new Map<string, JobDependencies>();
/** Gates by payload key: a job whose payload names one waits until it opens. */
const gates = new Map<string, { open: () => void; opened: Promise<void> }>();
const gate = (key: string) => {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  gates.set(key, { open, opened });
  return open;
};
/** How many times each job id failed so far (for a dependency that fails once, then succeeds). */
const failures = new Map<string, number>();

interface StepPayload {
  value?: number;
  fail?: 'always' | 'once';
  gate?: string;
}

@JobTask({ name: 'flow.step', maxRetries: 0 })
@Injectable()
class StepTask implements JobTaskHandler {
  async run(payload: StepPayload, ctx: JobContext) {
    const deps = await ctx.dependencies();
    seen.set(ctx.id, deps);
    if (payload.gate) await gates.get(payload.gate)?.opened;
    if (payload.fail === 'always') throw new UnrecoverableJobError('step failed on purpose');
    if (payload.fail === 'once' && !failures.has(ctx.id)) {
      failures.set(ctx.id, 1);
      throw new Error('step failed once');
    }
    const sum = Object.values(deps).reduce(
      (total, dep) => total + ((dep.result as { value?: number } | undefined)?.value ?? 0),
      0,
    );
    return { value: (payload.value ?? 0) + sum };
  }
}

@JobTask({ name: 'flow.retried', maxRetries: 2, backoff: () => 0 })
@Injectable()
class RetriedTask implements JobTaskHandler {
  run(payload: StepPayload, ctx: JobContext) {
    if (payload.fail === 'once' && ctx.attempt === 1) throw new Error('first attempt fails');
    return { value: payload.value ?? 0 };
  }
}

let app: JobsApp;

beforeAll(async () => {
  app = await startJobsApp(db.url, {
    tasks: [StepTask, RetriedTask],
    options: { pollingCheck: 0.2, concurrency: 20 },
  });
});

afterAll(() => app?.close());

const stateOf = async (id: string) => (await app.queue.getJob(id))?.state;

const waitForStates = (ids: Record<string, string>, expected: Record<string, string>) =>
  waitFor(`flow jobs to reach ${JSON.stringify(expected)}`, async () => {
    const states: Record<string, string | undefined> = {};
    for (const ref of Object.keys(expected)) states[ref] = await stateOf(ids[ref]);
    return Object.keys(expected).every((ref) => states[ref] === expected[ref]) && states;
  });

const countRows = async () =>
  Number(
    (
      await db.query<{ n: string }>(
        `SELECT (SELECT count(*) FROM jobs.jobs) + (SELECT count(*) FROM jobs."jobFlow")
              + (SELECT count(*) FROM jobs."jobFlowMember") + (SELECT count(*) FROM jobs."jobDependency") AS n`,
      )
    )[0].n,
  );

describe('a fan-out and fan-in flow', () => {
  it('runs dependents after their dependencies, passing results on', async () => {
    const flow = await app.queue.addFlow({
      name: 'order-1042',
      jobs: [
        { ref: 'charge', task: 'flow.step', payload: { value: 1 } },
        { ref: 'pack', task: 'flow.step', payload: { value: 10 }, dependsOn: ['charge'] },
        { ref: 'label', task: 'flow.step', payload: { value: 100 }, dependsOn: ['charge'] },
        { ref: 'ship', task: 'flow.step', payload: { value: 1000 }, dependsOn: ['pack', 'label'] },
      ],
    });
    expect(Object.keys(flow.jobs)).toEqual(['charge', 'pack', 'label', 'ship']);
    const ship = await app.queue.waitForJob(flow.jobs.ship, { timeout: 30 });
    // ship = 1000 + pack (10 + 1) + label (100 + 1)
    expect(ship).toEqual({ value: 1112 });
    expect(seen.get(flow.jobs.ship)).toEqual({
      pack: { id: flow.jobs.pack, state: 'completed', result: { value: 11 } },
      label: { id: flow.jobs.label, state: 'completed', result: { value: 101 } },
    });
    expect(seen.get(flow.jobs.charge)).toEqual({});
    const info = await app.queue.getFlow(flow.flowId);
    expect(info).toMatchObject({ flowId: flow.flowId, name: 'order-1042' });
    expect(info!.jobs).toEqual([
      { ref: 'charge', id: flow.jobs.charge, task: 'flow.step', state: 'completed', dependsOn: [] },
      {
        ref: 'pack',
        id: flow.jobs.pack,
        task: 'flow.step',
        state: 'completed',
        dependsOn: ['charge'],
      },
      {
        ref: 'label',
        id: flow.jobs.label,
        task: 'flow.step',
        state: 'completed',
        dependsOn: ['charge'],
      },
      {
        ref: 'ship',
        id: flow.jobs.ship,
        task: 'flow.step',
        state: 'completed',
        dependsOn: ['pack', 'label'],
      },
    ]);
    expect((await app.queue.getJob(flow.jobs.ship))?.flowId).toBe(flow.flowId);
  });

  it("keeps a dependent's own waitUntil, whichever ending releases it", async () => {
    const later = new Date(Date.now() + 3_600_000);
    const flow = await app.queue.addFlow({
      jobs: [
        { ref: 'done', task: 'flow.step', payload: { value: 1 } },
        { ref: 'failed', task: 'flow.step', payload: { fail: 'always' } },
        // Released by the runner's completion statement (completeInFlow)
        { ref: 'later', task: 'flow.step', waitUntil: later, dependsOn: ['done'] },
        { ref: 'past', task: 'flow.step', waitUntil: new Date(0), dependsOn: ['done'] },
        // Released by the flowJobEnded trigger: a failure, its policy 'run'
        {
          ref: 'laterAfterFailure',
          task: 'flow.step',
          waitUntil: later,
          dependsOn: ['failed'],
          onDependencyFailure: 'run',
        },
      ],
    });
    await waitForStates(flow.jobs, {
      done: 'completed',
      failed: 'failed',
      past: 'completed',
      later: 'pending',
      laterAfterFailure: 'pending',
    });
    for (const ref of ['later', 'laterAfterFailure']) {
      expect((await app.queue.getJob(flow.jobs[ref]))?.waitUntil).toEqual(later);
    }
    expect(await app.queue.cancelFlow(flow.flowId)).toBe(2);
  });

  it('keeps a dependent blocked, never claimed, until its last dependency ends', async () => {
    const open = gate('slow');
    const flow = await app.queue.addFlow({
      jobs: [
        { ref: 'fast', task: 'flow.step', payload: { value: 1 } },
        { ref: 'slow', task: 'flow.step', payload: { value: 2, gate: 'slow' } },
        { ref: 'sink', task: 'flow.step', dependsOn: ['fast', 'slow'] },
      ],
    });
    await waitForStates(flow.jobs, { fast: 'completed', slow: 'active', sink: 'blocked' });
    const blocked = await app.queue.getJob(flow.jobs.sink);
    expect(blocked).toMatchObject({ state: 'blocked', waitUntil: null, attempt: 0 });
    open();
    await expect(app.queue.waitForJob(flow.jobs.sink, { timeout: 30 })).resolves.toEqual({
      value: 3,
    });
  });

  it('counts a dependency that fails and is retried only once it succeeds', async () => {
    const flow = await app.queue.addFlow({
      jobs: [
        { ref: 'flaky', task: 'flow.retried', payload: { value: 5, fail: 'once' } },
        { ref: 'after', task: 'flow.step', dependsOn: ['flaky'] },
      ],
    });
    await expect(app.queue.waitForJob(flow.jobs.after, { timeout: 30 })).resolves.toEqual({
      value: 5,
    });
    expect((await app.queue.getJob(flow.jobs.flaky))?.attempt).toBe(2);
    expect(seen.get(flow.jobs.after)).toEqual({
      flaky: { id: flow.jobs.flaky, state: 'completed', result: { value: 5 } },
    });
  });
});

describe('a dependency that does not complete', () => {
  it("cancels its dependents by default, transitively, naming the dependency; 'run' runs anyway", async () => {
    const flow = await app.queue.addFlow({
      jobs: [
        { ref: 'charge', task: 'flow.step', payload: { fail: 'always' } },
        { ref: 'pack', task: 'flow.step', dependsOn: ['charge'] },
        { ref: 'ship', task: 'flow.step', dependsOn: ['pack'] },
        { ref: 'refund', task: 'flow.step', dependsOn: ['charge'], onDependencyFailure: 'run' },
      ],
    });
    const shipping = app.queue.waitForJob(flow.jobs.ship, { timeout: 30 });
    await expect(shipping).rejects.toThrow(JobCancelledError);
    await expect(app.queue.waitForJob(flow.jobs.refund, { timeout: 30 })).resolves.toEqual({
      value: 0,
    });
    expect(seen.get(flow.jobs.refund)).toEqual({
      charge: { id: flow.jobs.charge, state: 'failed', error: 'step failed on purpose' },
    });
    const pack = await app.queue.getJob(flow.jobs.pack);
    expect(pack).toMatchObject({ state: 'cancelled', attempt: 0 });
    expect(pack?.lastErrorMessage).toBe(
      `Cancelled: its dependency "charge" (${flow.jobs.charge}) ended failed.`,
    );
    expect((await app.queue.getJob(flow.jobs.ship))?.lastErrorMessage).toContain(
      `its dependency "pack" (${flow.jobs.pack}) ended cancelled`,
    );
    expect(seen.has(flow.jobs.pack)).toBe(false);
    expect(seen.has(flow.jobs.ship)).toBe(false);
  });
});

describe('cancelFlow and retryFlow', () => {
  it('cancels the blocked, pending and running jobs of a flow, and retryFlow runs them on', async () => {
    const open = gate('cancel-me');
    const flow = await app.queue.addFlow({
      jobs: [
        { ref: 'done', task: 'flow.step', payload: { value: 1 } },
        {
          ref: 'running',
          task: 'flow.step',
          payload: { value: 2, gate: 'cancel-me' },
          dependsOn: ['done'],
        },
        {
          ref: 'later',
          task: 'flow.step',
          payload: { value: 3 },
          waitUntil: new Date(Date.now() + 3_600_000),
        },
        { ref: 'sink', task: 'flow.step', dependsOn: ['running', 'later'] },
      ],
    });
    await waitForStates(flow.jobs, {
      done: 'completed',
      running: 'active',
      later: 'pending',
      sink: 'blocked',
    });
    const sinkCancelled = app.queue.waitForJob(flow.jobs.sink, { timeout: 30 });
    sinkCancelled.catch(() => undefined);
    expect(await app.queue.cancelFlow(flow.flowId)).toBe(3);
    await expect(sinkCancelled).rejects.toThrow(JobCancelledError);
    open();
    await waitForStates(flow.jobs, {
      done: 'completed',
      running: 'cancelled',
      later: 'cancelled',
      sink: 'cancelled',
    });
    expect(await app.queue.cancelFlow(flow.flowId)).toBe(0);

    gates.delete('cancel-me');
    expect(await app.queue.retryFlow(flow.flowId)).toBe(3);
    // `later` is due now (a retry does not keep its waitUntil); `sink` waits for both again.
    expect(await stateOf(flow.jobs.sink)).toMatch(/blocked|pending|active|completed/);
    await expect(app.queue.waitForJob(flow.jobs.sink, { timeout: 30 })).resolves.toEqual({
      value: 2 + 1 + 3,
    });
    expect(await app.queue.retryFlow(flow.flowId)).toBe(0);
  });

  it('returns null and 0 for a flow that does not exist', async () => {
    const unknown = '01890000-0000-7000-8000-000000000000';
    expect(await app.queue.getFlow(unknown)).toBeNull();
    expect(await app.queue.cancelFlow(unknown)).toBe(0);
    expect(await app.queue.retryFlow(unknown)).toBe(0);
  });
});

describe('addFlow refuses a bad flow before writing anything', () => {
  const refused = async (jobs: unknown, ref: string | null, message: string) => {
    const before = await countRows();
    const error = (await app.queue
      .addFlow({ jobs } as Parameters<JobsApp['queue']['addFlow']>[0])
      .catch((err: unknown) => err)) as InvalidFlowError;
    expect(error).toBeInstanceOf(InvalidFlowError);
    expect(error.ref).toBe(ref);
    expect(error.message).toContain(message);
    expect(await countRows()).toBe(before);
    return error;
  };

  it('a duplicate ref', () =>
    refused(
      [
        { ref: 'a', task: 'flow.step' },
        { ref: 'a', task: 'flow.step' },
      ],
      'a',
      'the ref is used twice',
    ));

  it('an unknown ref in dependsOn', () =>
    refused(
      [{ ref: 'a', task: 'flow.step', dependsOn: ['nope'] }],
      'a',
      'depends on "nope", which is no ref of the flow',
    ));

  it('a cycle, naming its path', () =>
    refused(
      [
        { ref: 'root', task: 'flow.step' },
        { ref: 'a', task: 'flow.step', dependsOn: ['root', 'c'] },
        { ref: 'b', task: 'flow.step', dependsOn: ['a'] },
        { ref: 'c', task: 'flow.step', dependsOn: ['b'] },
      ],
      'a',
      'is on a dependency cycle: a -> c -> b -> a',
    ));

  it('an unknown task, with the UnknownTaskError as its cause', async () => {
    const error = await refused(
      [
        { ref: 'a', task: 'flow.step' },
        { ref: 'b', task: 'flow.nope', dependsOn: ['a'] },
      ],
      'b',
      'No @JobTask() handler is registered for task "flow.nope"',
    );
    expect(error.cause).toBeInstanceOf(UnknownTaskError);
  });

  it('a uniqueKey, a promise, a bad policy, no jobs, too many jobs', async () => {
    await refused([{ ref: 'a', task: 'flow.step', uniqueKey: 'k' }], 'a', 'option "uniqueKey"');
    await refused([{ ref: 'a', task: 'flow.step', promise: true }], 'a', 'option "promise"');
    await refused(
      [{ ref: 'a', task: 'flow.step', onDependencyFailure: 'ignore' }],
      'a',
      `option "onDependencyFailure" must be 'cancel' or 'run'`,
    );
    await refused([], null, 'option "jobs" must be an array of 1 to 10000 jobs');
    await refused(
      Array.from({ length: 10_001 }, (_, i) => ({ ref: `j${i}`, task: 'flow.step' })),
      null,
      'got 10001 jobs',
    );
  });
});

describe('inside a transaction', () => {
  let dataSource: DataSource;

  beforeAll(async () => {
    dataSource = new DataSource({ type: 'postgres', url: db.url });
    await dataSource.initialize();
  });

  afterAll(() => dataSource?.destroy());

  it('adds nothing when the transaction rolls back, and the flow when it commits', async () => {
    const before = await countRows();
    let flowId = '';
    await expect(
      dataSource.transaction(async (manager) => {
        ({ flowId } = await app.queue.addFlow({
          manager,
          jobs: [
            { ref: 'a', task: 'flow.step' },
            { ref: 'b', task: 'flow.step', dependsOn: ['a'] },
          ],
        }));
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await countRows()).toBe(before);
    expect(await app.queue.getFlow(flowId)).toBeNull();

    const added = await dataSource.transaction((manager) =>
      app.queue.addFlow({
        manager,
        jobs: [
          { ref: 'a', task: 'flow.step', payload: { value: 4 } },
          { ref: 'b', task: 'flow.step', dependsOn: ['a'] },
        ],
      }),
    );
    await expect(app.queue.waitForJob(added.jobs.b, { timeout: 30 })).resolves.toEqual({
      value: 4,
    });
  });
});
