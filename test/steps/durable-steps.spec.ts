import { Inject, Injectable } from '@nestjs/common';
import {
  InvalidContextArgumentError,
  InvalidEventError,
  JobEventsService,
  JobQueueService,
  JobTask,
  StepNotRecordedError,
} from 'nestjs-pg-jobs';
import type { JobContext, JobEvent, JobTaskHandler } from 'nestjs-pg-jobs';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { StepMemo } from '../../libs/jobs/src/steps/step-memo.js';
import { DatabaseStepStore } from '../../libs/jobs/src/steps/step-store.js';
import { stepsSql } from '../../libs/jobs/src/steps/steps.sql.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

/** How many times each step body ran, by job id and step name. */
const bodyRuns = new Map<string, number>();
const ran = (id: string, step: string) =>
  bodyRuns.set(`${id}:${step}`, (bodyRuns.get(`${id}:${step}`) ?? 0) + 1);
const runsOf = (id: string, step: string) => bodyRuns.get(`${id}:${step}`) ?? 0;

/** Three steps side by side and a loop over one name, then a failure on attempt 1 only. */
@JobTask({ name: 'steps.replay', maxRetries: 1 })
@Injectable()
class ReplayTask implements JobTaskHandler<unknown, unknown> {
  async run(_payload: unknown, ctx: JobContext) {
    const side = await Promise.all(
      ['x', 'y', 'z'].map((name) =>
        ctx.step(name, async () => {
          ran(ctx.id, name);
          await new Promise((resolve) => setTimeout(resolve, name === 'x' ? 30 : 1));
          return `${name}-value`;
        }),
      ),
    );
    const loop: number[] = [];
    for (let i = 0; i < 3; i++) {
      loop.push(await ctx.step('item', () => (ran(ctx.id, `item${i}`), i * 10)));
    }
    const nothing = await ctx.step('nothing', () => void ran(ctx.id, 'nothing'));
    if (ctx.attempt === 1) throw new Error('fails once, after its steps');
    return { side, loop, nothing: nothing === undefined };
  }
}

/** A step before and after a durable sleep of `seconds`. */
@JobTask('steps.sleeper')
@Injectable()
class SleeperTask implements JobTaskHandler<{ seconds: number }, string> {
  async run(payload: { seconds: number }, ctx: JobContext) {
    const before = await ctx.step('before', () => (ran(ctx.id, 'before'), 'b'));
    await ctx.sleep('nap', payload.seconds);
    const after = await ctx.step('after', () => (ran(ctx.id, 'after'), 'a'));
    return `${before}${after}@${ctx.attempt}`;
  }
}

/** Waits for event `payload.event`, returning its payload (or null at the timeout). */
@JobTask('steps.waiter')
@Injectable()
class WaiterTask implements JobTaskHandler<{ event: string; timeout?: number }, unknown> {
  async run(payload: { event: string; timeout?: number }, ctx: JobContext) {
    ran(ctx.id, 'run');
    const timeout = payload.timeout === undefined ? {} : { timeout: payload.timeout };
    return { got: await ctx.waitForEvent(payload.event, timeout) };
  }
}

/** Catches its sleep's suspension and returns: it is suspended all the same. */
@JobTask('steps.catcher')
@Injectable()
class CatcherTask implements JobTaskHandler<unknown, string> {
  async run(_payload: unknown, ctx: JobContext) {
    try {
      await ctx.sleep('caught', 3600);
    } catch {
      // Swallowed on purpose.
    }
    return 'returned';
  }
}

/** Names a step badly. */
@JobTask({ name: 'steps.badName', maxRetries: 0 })
@Injectable()
class BadNameTask implements JobTaskHandler<{ name: unknown }, string> {
  async run(payload: { name: unknown }, ctx: JobContext) {
    try {
      await ctx.step(payload.name as string, () => 1);
      return 'accepted';
    } catch (err) {
      return `${(err as Error).name}: ${(err as Error).message}`;
    }
  }
}

/** Returns `value` after `ms`, or fails with `fail`. */
@JobTask({ name: 'steps.child', maxRetries: 0 })
@Injectable()
class ChildTask implements JobTaskHandler<{ value?: number; fail?: string; ms: number }, number> {
  async run(payload: { value?: number; fail?: string; ms: number }) {
    await new Promise((resolve) => setTimeout(resolve, payload.ms));
    if (payload.fail) throw new Error(payload.fail);
    return payload.value ?? 0;
  }
}

/** Adds two children in a step (a flow, or plain jobs), waits for them, returns how they ended. */
@JobTask('steps.parent')
@Injectable()
class ParentTask implements JobTaskHandler<{ flow: boolean; settled?: boolean }, unknown> {
  constructor(@Inject(JobQueueService) private readonly queue: JobQueueService) {}

  async run(payload: { flow: boolean; settled?: boolean }, ctx: JobContext) {
    const children = [
      { task: 'steps.child', payload: { value: 7, ms: 300 } },
      { task: 'steps.child', payload: { fail: 'no stock', ms: 300 } },
    ];
    const ids = await ctx.step('fan-out', async () => {
      ran(ctx.id, 'fan-out');
      if (payload.flow) {
        const flow = await this.queue.addFlow({
          jobs: children.map((child, i) => ({ ...child, ref: `child-${i}` })),
        });
        return Object.values(flow.jobs);
      }
      const added = await this.queue.addJobs(children);
      // With `settled`, the wait finds them ended.
      if (payload.settled) {
        await Promise.allSettled(added.map(({ id }) => this.queue.waitForJob(id, { timeout: 30 })));
      }
      return added.map(({ id }) => id);
    });
    return { ids, outcomes: await ctx.waitForJobs(ids) };
  }
}

/** Gates of `steps.slow`, by job id. */
const gates = new Map<string, () => void>();

/** One step that lasts until the test opens its gate. */
@JobTask('steps.slow')
@Injectable()
class SlowStepTask implements JobTaskHandler<unknown, string> {
  async run(_payload: unknown, ctx: JobContext) {
    return ctx.step(
      'slow',
      () => new Promise<string>((resolve) => gates.set(ctx.id, () => resolve('done'))),
    );
  }
}

@JobTask('steps.plain')
@Injectable()
class PlainTask implements JobTaskHandler<unknown, string> {
  run() {
    return 'plain';
  }
}

const TASKS = [
  ReplayTask,
  SleeperTask,
  WaiterTask,
  CatcherTask,
  BadNameTask,
  PlainTask,
  ChildTask,
  ParentTask,
  SlowStepTask,
];
let app: JobsApp;
const events: JobEvent[] = [];

beforeAll(async () => {
  // Sleeps and waits' timeouts fall due at a poll; what must resume a job without one runs on an
  // app with no poll in reach (withoutPolls).
  app = await startJobsApp(db.url, { tasks: TASKS, options: { pollingCheck: 5, retryBackoff: 0 } });
  const heard = app.module.get(JobEventsService);
  for (const type of ['suspended', 'resumed'] as const) {
    heard.on(type).subscribe((event) => events.push(event));
  }
});

const stateOf = async (id: string, on = app) => (await on.queue.getJob(id))?.state;

/**
 * Runs `test` on an app of its own schema whose polls (the runner's, and its waiters' catch-up)
 * are a minute away: a job it resumes within the test's timeouts (20 s) was resumed by a
 * notification. A bound on the time since the wake-up would not say so: a poll lands anywhere
 * within its period, and a busy machine can be slow.
 */
async function withoutPolls(test: (quiet: JobsApp) => Promise<void>): Promise<void> {
  const quiet = await startJobsApp(db.url, {
    tasks: TASKS,
    options: { pollingCheck: 60, retryBackoff: 0, schema: 'steps_no_poll' },
  });
  try {
    await test(quiet);
  } finally {
    await quiet.close();
  }
}

it('replays finished steps on a retry: Promise.all over named steps and a loop over one name', async () => {
  const { id } = await app.queue.addJob({ task: 'steps.replay' });
  const result = await app.queue.waitForJob(id, { timeout: 30 });
  expect(result).toEqual({
    side: ['x-value', 'y-value', 'z-value'],
    loop: [0, 10, 20],
    nothing: true,
  });
  for (const step of ['x', 'y', 'z', 'item0', 'item1', 'item2', 'nothing']) {
    expect([step, runsOf(id, step)]).toEqual([step, 1]);
  }
  const job = await app.queue.getJob(id);
  expect(job).toMatchObject({ state: 'completed', attempt: 2 });
  // In the order of the first calls: x, y and z were called in that order, whichever ended first.
  expect(job!.steps.map((step) => step.name)).toEqual([
    'x',
    'y',
    'z',
    'item',
    'item#2',
    'item#3',
    'nothing',
  ]);
  expect(job!.steps.every((step) => step.state === 'completed' && step.endedAt !== null)).toBe(
    true,
  );
});

it('sleeps durably: suspended without a slot or a retry, then resumed, running only what follows', async () => {
  const { id } = await app.queue.addJob({ task: 'steps.sleeper', payload: { seconds: 1 } });
  await waitFor('the job to be suspended', async () => (await stateOf(id)) === 'suspended');
  const suspended = await app.queue.getJob(id);
  expect(suspended!.waitingFor).toEqual({ until: expect.any(Date) });
  expect(suspended!.steps.map((step) => [step.name, step.state])).toEqual([
    ['before', 'completed'],
    ['nap', 'running'],
  ]);
  expect(await app.queue.waitForJob(id, { timeout: 30 })).toBe('ba@1');
  expect([runsOf(id, 'before'), runsOf(id, 'after')]).toEqual([1, 1]);
  const job = await app.queue.getJob(id);
  expect(job).toMatchObject({ state: 'completed', attempt: 1, waitingFor: null });
  expect(job!.steps.map((step) => [step.name, step.state])).toEqual([
    ['before', 'completed'],
    ['nap', 'completed'],
    ['after', 'completed'],
  ]);
  const told = events.filter((event) => event.id === id).map((event) => event.type);
  expect(told).toEqual(['suspended', 'resumed']);
});

it('sleeps across a restart of every instance', async () => {
  const { id } = await app.queue.addJob({ task: 'steps.sleeper', payload: { seconds: 1 } });
  await waitFor('the job to be suspended', async () => (await stateOf(id)) === 'suspended');
  await app.close();
  app = await startJobsApp(db.url, { tasks: TASKS, options: { pollingCheck: 5, retryBackoff: 0 } });
  expect(await app.queue.waitForJob(id, { timeout: 30 })).toBe('ba@1');
  expect([runsOf(id, 'before'), runsOf(id, 'after')]).toEqual([1, 1]);
});

describe('waitForEvent', () => {
  it('returns an event sent before the wait at once, without suspending', async () => {
    expect(await app.queue.sendEvent('approval:early', { approved: true })).toBe(true);
    const { id } = await app.queue.addJob({
      task: 'steps.waiter',
      payload: { event: 'approval:early' },
    });
    expect(await app.queue.waitForJob(id, { timeout: 30 })).toEqual({ got: { approved: true } });
    expect(runsOf(id, 'run')).toBe(1);
  });

  it('suspends until the event is sent, then resumes at once (no poll), and the first event wins', () =>
    withoutPolls(async (quiet) => {
      const { id } = await quiet.queue.addJob({
        task: 'steps.waiter',
        payload: { event: 'approval:late' },
      });
      await waitFor(
        'the job to be suspended',
        async () => (await stateOf(id, quiet)) === 'suspended',
      );
      expect((await quiet.queue.getJob(id))!.waitingFor).toEqual({
        event: 'approval:late',
        until: null,
      });
      expect(await quiet.queue.sendEvent('approval:late', { by: 'ann' })).toBe(true);
      expect(await quiet.queue.sendEvent('approval:late', { by: 'bob' })).toBe(false);
      expect(await quiet.queue.waitForJob(id, { timeout: 20 })).toEqual({ got: { by: 'ann' } });
      expect(runsOf(id, 'run')).toBe(2);
    }));

  it('returns null once its timeout has passed with no event', async () => {
    const { id } = await app.queue.addJob({
      task: 'steps.waiter',
      payload: { event: 'approval:never', timeout: 1 },
    });
    await waitFor('the job to be suspended', async () => (await stateOf(id)) === 'suspended');
    const { waitingFor } = (await app.queue.getJob(id))!;
    expect(waitingFor).toEqual({ event: 'approval:never', until: expect.any(Date) });
    expect(await app.queue.waitForJob(id, { timeout: 30 })).toEqual({ got: null });
  });

  it.each([
    ['', undefined, /sendEvent\(\) takes a name: a non-empty string of at most 200 characters/],
    [
      'ok',
      { when: new Map() },
      /sendEvent\(\) takes a JSON payload, but \$.when is a Map instance/,
    ],
  ])(
    'refuses the name %j or its payload with InvalidEventError, sending nothing',
    async (name, payload, message) => {
      const sent = app.queue.sendEvent(name, payload);
      await expect(sent).rejects.toThrow(InvalidEventError);
      await expect(sent).rejects.toThrow(message);
      const [{ n }] = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM jobs."jobEvent" WHERE name = $1`,
        [name],
      );
      expect(n).toBe(0);
    },
  );
});

it('lists a step that runs for more than a second as running, then as completed, written once more', async () => {
  const { id } = await app.queue.addJob({ task: 'steps.slow' });
  const running = await waitFor('the step to be listed running', async () => {
    const steps = (await app.queue.getJob(id))?.steps ?? [];
    return steps.length === 1 && steps[0].state === 'running' && steps[0];
  });
  expect(running).toMatchObject({ name: 'slow', endedAt: null });
  gates.get(id)!();
  expect(await app.queue.waitForJob(id, { timeout: 30 })).toBe('done');
  const [step] = (await app.queue.getJob(id))!.steps;
  expect(step).toMatchObject({ name: 'slow', state: 'completed', startedAt: running.startedAt });
  expect(step.endedAt!.getTime() - step.startedAt.getTime()).toBeGreaterThanOrEqual(1_000);
});

describe('waitForJobs', () => {
  /** Waits up to `timeout` s for parent `id`, and expects how its two children ended, by id. */
  async function expectChildrenReported(id: string, timeout: number, on = app): Promise<void> {
    const { ids, outcomes } = (await on.queue.waitForJob(id, { timeout })) as {
      ids: string[];
      outcomes: Record<string, unknown>;
    };
    expect(outcomes).toEqual({
      [ids[0]]: { state: 'completed', result: 7 },
      [ids[1]]: { state: 'failed', error: 'no stock' },
    });
  }

  it("suspends until a flow's jobs ended, resumed by their endings (no poll), a failure reported", () =>
    // Its recheck is 30 s away too.
    withoutPolls(async (quiet) => {
      const { id } = await quiet.queue.addJob({ task: 'steps.parent', payload: { flow: true } });
      await waitFor(
        'the parent to be suspended',
        async () => (await stateOf(id, quiet)) === 'suspended',
      );
      const suspended = await quiet.queue.getJob(id);
      expect(suspended!.waitingFor).toEqual({ jobs: expect.any(Array) });
      await expectChildrenReported(id, 20, quiet);
      expect(runsOf(id, 'fan-out')).toBe(1);
      expect(await quiet.queue.getJob(id)).toMatchObject({ state: 'completed', attempt: 1 });
    }));

  it('returns at once for jobs that ended already, outside any flow', async () => {
    const { id } = await app.queue.addJob({
      task: 'steps.parent',
      payload: { flow: false, settled: true },
    });
    await expectChildrenReported(id, 30);
    expect(events.some((event) => event.id === id && event.type === 'suspended')).toBe(false);
  });

  it('finds jobs outside any flow ended at its recheck, within 30 s: their endings wake nobody', async () => {
    const { id } = await app.queue.addJob({ task: 'steps.parent', payload: { flow: false } });
    await waitFor('the parent to be suspended', async () => (await stateOf(id)) === 'suspended');
    const { waitingFor } = (await app.queue.getJob(id))!;
    expect((waitingFor as { jobs: string[] }).jobs).toHaveLength(2);
    await expectChildrenReported(id, 45);
    // No edge was left for jobs outside flows: nothing would ever end or delete it.
    const edges = await db.query(`SELECT 1 FROM jobs."jobDependency" WHERE "jobId" = $1`, [id]);
    expect(edges).toEqual([]);
  }, 60_000);
});

it('is suspended even when the task catches its suspension, and a suspended job can be cancelled', async () => {
  const { id } = await app.queue.addJob({ task: 'steps.catcher' });
  await waitFor('the job to be suspended', async () => (await stateOf(id)) === 'suspended');
  expect(await app.queue.cancelJob(id)).toBe(true);
  expect(await app.queue.getJob(id)).toMatchObject({ state: 'cancelled', waitingFor: null });
});

it('holds no slot while suspended: with concurrency 1, a job runs while 100 sleep', async () => {
  const single = await startJobsApp(db.url, {
    tasks: TASKS,
    options: { concurrency: 1, pollingCheck: 0.2, schema: 'steps_single' },
  });
  try {
    const sleepers = await single.queue.addJobs(
      Array.from({ length: 100 }, () => ({ task: 'steps.sleeper', payload: { seconds: 3600 } })),
    );
    await waitFor(
      'the 100 jobs to be suspended',
      async () => {
        const [{ n }] = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM steps_single.jobs WHERE "waitingFor" IS NOT NULL`,
        );
        return n === 100;
      },
      60_000,
    );
    const { id } = await single.queue.addJob({ task: 'steps.plain' });
    expect(await single.queue.waitForJob(id, { timeout: 30 })).toBe('plain');
    expect(await single.queue.cancelJobs({ state: 'suspended' })).toBe(sleepers.length);
  } finally {
    await single.close();
  }
}, 90_000);

it.each([
  ['', /ctx\.step\(\) takes a name: a non-empty string of at most 200 characters, without "#"/],
  ['a#2', /without "#"; got "a#2"/],
  [42, /got 42/],
])('refuses the step name %j with InvalidContextArgumentError', async (name, message) => {
  const { id } = await app.queue.addJob({ task: 'steps.badName', payload: { name } });
  const thrown = (await app.queue.waitForJob(id, { timeout: 30 })) as string;
  expect(thrown).toMatch(new RegExp(`^${InvalidContextArgumentError.name}: `));
  expect(thrown).toMatch(message);
});

it("refuses a step write of an attempt that no longer holds its job (the claim's fence)", async () => {
  const jobsDb = app.module.get(JobsDatabase);
  const store = new DatabaseStepStore(jobsDb, stepsSql(toSchemaName('jobs')));
  const [{ id }] = await db.query<{ id: string }>(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "startedAt", "claimToken")
     VALUES (gen_random_uuid(), 'steps.plain', 'active', 1, 0, now(), now(), 7) RETURNING id`,
  );
  const stale = new StepMemo(store, { id, attempt: 1, claim: '6' }, 1_000_000);
  await expect(stale.step('s', () => 'stale')).rejects.toThrow(StepNotRecordedError);
  const current = new StepMemo(store, { id, attempt: 1, claim: '7' }, 1_000_000);
  expect(await current.step('s', () => 'current')).toBe('current');
  const stored = await db.query(
    `SELECT name, value, "claimToken" FROM jobs."jobStep" WHERE "jobId" = $1`,
    [id],
  );
  expect(stored).toEqual([{ name: 's', value: 'current', claimToken: '7' }]);
});
