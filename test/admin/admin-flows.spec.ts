import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { JobTask, JobsAdminModule, JobsMetricsModule } from 'nestjs-pg-jobs';
import type { AddedFlow, JobContext, JobTaskHandler, ListedJobInfo } from 'nestjs-pg-jobs';
import { json, startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import { parsePrometheusText } from '../support/prometheus-text.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

/** Gates by name: a step whose payload names one runs until the test (or a cancel) opens it. */
const gates = new Map<string, { opened: Promise<void>; open: () => void }>();
function gate(name: string) {
  let found = gates.get(name);
  if (!found) {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    gates.set(name, (found = { opened, open }));
  }
  return found;
}

interface StepPayload {
  gate?: string;
  /** Its first attempt fails (after its gate): a flow that fails, then goes on once retried. */
  failFirst?: boolean;
}

@JobTask({ name: 'flowStep', maxRetries: 0 })
@Injectable()
class FlowStep implements JobTaskHandler<StepPayload> {
  async run(payload: StepPayload, ctx: JobContext) {
    if (payload.gate) {
      const held = gate(payload.gate);
      ctx.signal.addEventListener('abort', held.open);
      await held.opened;
    }
    if (payload.failFirst && ctx.attempt === 1) throw new Error('the first attempt fails');
    return { done: true };
  }
}

let server: HttpJobsApp;
const api = (path: string, init: RequestInit = {}) =>
  fetch(`${server.url}/jobs-admin/api/${path}`, init);
const post = (path: string) => api(path, { method: 'POST', headers: { 'x-jobs-admin': '1' } });
const listed = async (query: string) =>
  (await json<{ jobs: ListedJobInfo[] }>(api(`jobs?${query}`))).jobs;
const statesOf = async (flow: AddedFlow) =>
  Object.fromEntries(
    await Promise.all(
      Object.entries(flow.jobs).map(async ([ref, id]) => [
        ref,
        (await server.queue.getJob(id))?.state,
      ]),
    ),
  );
const reach = (flow: AddedFlow, expected: Record<string, string>) =>
  waitFor(`the flow's jobs to be ${JSON.stringify(expected)}`, async () => {
    const states = await statesOf(flow);
    return Object.entries(expected).every(([ref, state]) => states[ref] === state);
  });

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [
      JobsAdminModule.forRoot({ path: 'jobs-admin', guard: { canActivate: () => true } }),
      JobsMetricsModule.forRoot({ path: 'metrics' }),
    ],
    tasks: [FlowStep],
    options: { pollingCheck: 0.1, concurrency: 4 },
  });
});
afterAll(async () => {
  for (const held of gates.values()) held.open();
  await server?.close();
});

/** charge, then pack and label, then ship: charge is held at its gate, the others wait for it. */
let order: AddedFlow;

describe('a flow whose first job runs', () => {
  beforeAll(async () => {
    order = await server.queue.addFlow({
      name: 'order-1042',
      jobs: [
        { ref: 'charge', task: 'flowStep', payload: { gate: 'charge', failFirst: true } },
        { ref: 'pack', task: 'flowStep', dependsOn: ['charge'] },
        { ref: 'label', task: 'flowStep', dependsOn: ['charge'] },
        { ref: 'ship', task: 'flowStep', dependsOn: ['pack', 'label'] },
      ],
    });
    await reach(order, { charge: 'active' });
  });

  it('lists its waiting jobs as blocked, with their flow, and never as pending', async () => {
    const blocked = await listed('state=blocked');
    expect(blocked.map((job) => job.id).sort()).toEqual(
      [order.jobs.pack, order.jobs.label, order.jobs.ship].sort(),
    );
    for (const job of blocked) {
      expect(job).toMatchObject({ state: 'blocked', flowId: order.flowId, waitUntil: null });
    }
    expect(await listed('state=pending')).toEqual([]);
    const [active] = await listed('state=active');
    expect(active).toMatchObject({ id: order.jobs.charge, flowId: order.flowId });
    expect(active).not.toHaveProperty('inFlow');
  });

  it('shows each job with its own state in the list of every job', async () => {
    const all = Object.fromEntries((await listed('')).map((job) => [job.id, job]));
    expect(all[order.jobs.charge]).toMatchObject({ state: 'active', flowId: order.flowId });
    expect(all[order.jobs.ship]).toMatchObject({ state: 'blocked', flowId: order.flowId });
    // A job of no flow has none.
    const { id } = await server.queue.addJob({
      task: 'flowStep',
      waitUntil: new Date(Date.now() + 3600_000),
    });
    expect((await listed('state=pending')).map((job) => [job.id, job.flowId])).toEqual([
      [id, null],
    ]);
    expect((await listed('')).find((job) => job.id === id)).toMatchObject({
      state: 'pending',
      flowId: null,
    });
    await server.queue.cancelJob(id);
  });

  it('counts blocked jobs apart from pending ones, in stats and in metrics', async () => {
    const { tasks, totals } = await json(api('stats'));
    expect(tasks.find((line: { task: string }) => line.task === 'flowStep')).toMatchObject({
      pending: 0,
      blocked: 3,
      due: 0,
      active: 1,
    });
    expect(totals).toMatchObject({ pending: 0, blocked: 3, active: 1 });
    const { queues } = await json(api('queues'));
    expect(queues).toEqual([expect.objectContaining({ name: 'default', pending: 0, blocked: 3 })]);
    const samples = parsePrometheusText(await (await fetch(`${server.url}/metrics`)).text());
    const labels = '{queue="default",task="flowStep"}';
    expect(samples.get(`nestjs_pg_jobs_blocked${labels}`)).toBe(3);
    expect(samples.get(`nestjs_pg_jobs_queue_depth${labels}`)).toBe(0);
  });

  it('lists the flow with its jobs counted by state, running', async () => {
    const { flows, hasMore } = await json(api('flows'));
    expect(hasMore).toBe(false);
    expect(flows).toEqual([
      {
        flowId: order.flowId,
        name: 'order-1042',
        createdAt: expect.any(String),
        jobCount: 4,
        counts: { active: 1, blocked: 3 },
        state: 'running',
      },
    ]);
  });

  it('shows the flow: each job with its ref, task, state and dependencies', async () => {
    const { flow } = await json(api(`flows/${order.flowId}`));
    expect(flow).toMatchObject({ flowId: order.flowId, name: 'order-1042', state: 'running' });
    expect(flow.jobs).toEqual([
      { ref: 'charge', id: order.jobs.charge, task: 'flowStep', state: 'active', dependsOn: [] },
      {
        ref: 'pack',
        id: order.jobs.pack,
        task: 'flowStep',
        state: 'blocked',
        dependsOn: ['charge'],
      },
      {
        ref: 'label',
        id: order.jobs.label,
        task: 'flowStep',
        state: 'blocked',
        dependsOn: ['charge'],
      },
      {
        ref: 'ship',
        id: order.jobs.ship,
        task: 'flowStep',
        state: 'blocked',
        dependsOn: ['pack', 'label'],
      },
    ]);
  });
});

describe('POST api/flows/:id/retry', () => {
  it('queues again a failed flow, which then runs on to its end', async () => {
    gate('charge').open();
    await reach(order, {
      charge: 'failed',
      pack: 'cancelled',
      label: 'cancelled',
      ship: 'cancelled',
    });
    const failed = await json(api(`flows/${order.flowId}`));
    expect(failed.flow).toMatchObject({ state: 'failed', counts: { failed: 1, cancelled: 3 } });

    expect(await json(post(`flows/${order.flowId}/retry`))).toEqual({ retried: 4 });
    await reach(order, {
      charge: 'completed',
      pack: 'completed',
      label: 'completed',
      ship: 'completed',
    });
    const { flows } = await json(api('flows'));
    expect(flows[0]).toMatchObject({ counts: { completed: 4 }, state: 'completed' });
    // Nothing left to retry: the flow is known, and nothing is queued.
    expect(await json(post(`flows/${order.flowId}/retry`))).toEqual({ retried: 0 });
  });
});

describe('POST api/flows/:id/cancel', () => {
  it('cancels its running and blocked jobs, and says how many', async () => {
    const flow = await server.queue.addFlow({
      name: 'to-cancel',
      jobs: [
        { ref: 'first', task: 'flowStep', payload: { gate: 'never' } },
        { ref: 'second', task: 'flowStep', dependsOn: ['first'] },
      ],
    });
    await reach(flow, { first: 'active', second: 'blocked' });
    expect(await json(post(`flows/${flow.flowId}/cancel`))).toEqual({ cancelled: 2 });
    expect(await statesOf(flow)).toEqual({ first: 'cancelled', second: 'cancelled' });
    expect((await json(api(`flows/${flow.flowId}`))).flow.state).toBe('cancelled');
    expect(await json(post(`flows/${flow.flowId}/cancel`))).toEqual({ cancelled: 0 });

    // Latest first, paged as the job lists are.
    const first = await json(api('flows?limit=1'));
    expect(first).toMatchObject({ hasMore: true, flows: [{ flowId: flow.flowId }] });
    const second = await json(api('flows?limit=1&offset=1'));
    expect(second).toMatchObject({ hasMore: false, flows: [{ flowId: order.flowId }] });
  });

  it('refuses (403) a request without the X-Jobs-Admin header, changing nothing', async () => {
    const flow = await server.queue.addFlow({
      jobs: [{ ref: 'later', task: 'flowStep', waitUntil: new Date(Date.now() + 3600_000) }],
    });
    for (const action of ['cancel', 'retry']) {
      const body = await json(api(`flows/${flow.flowId}/${action}`, { method: 'POST' }), 403);
      expect(body.message).toMatch(/X-Jobs-Admin: 1/);
    }
    expect(await statesOf(flow)).toEqual({ later: 'pending' });
    await server.queue.cancelFlow(flow.flowId);
  });
});

describe('unknown flows and bad requests', () => {
  it('answers 404 for a flow that does not exist', async () => {
    const id = randomUUID();
    expect((await json(api(`flows/${id}`), 404)).message).toBe(`No flow ${id}.`);
    await json(post(`flows/${id}/cancel`), 404);
    await json(post(`flows/${id}/retry`), 404);
  });

  it.each([
    ['flows/42', /"id" must be a flow id \(a UUID\); got "42"/],
    ['flows?limit=0', /"limit" must be an integer from 1 to 100; got "0"/],
    ['flows?limit=101', /"limit" must be an integer from 1 to 100/],
    ['flows?state=running', /unknown query parameter "state"/],
    ['jobs?state=snoozed', /"state" must be one of blocked, pending, active/],
  ])('answers 400 to GET %s', async (path, message) => {
    expect((await json(api(path), 400)).message).toMatch(message);
  });

  it('answers 400 to an action on a bad id', async () => {
    await json(post('flows/not-a-uuid/cancel'), 400);
    await json(post('flows/not-a-uuid/retry'), 400);
  });
});
