import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { AppSetup, JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
/** Every run of this file's tasks, by job id: the attempt each run was. */
const runs = new Map<string, number[]>();
const ran = (ctx: JobContext) => runs.set(ctx.id, [...(runs.get(ctx.id) ?? []), ctx.attempt]);
/** Jobs whose first run is over: the tasks below behave differently on the next. */
const firstRunOver = new Set<string>();

@JobTask('life.step')
@Injectable()
class StepTask implements JobTaskHandler<unknown, string> {
  run(_payload: unknown, ctx: JobContext) {
    ran(ctx);
    return 'done';
  }
}

/** Snoozes for a second on its first run, completes on the next. */
@JobTask('life.napOnce')
@Injectable()
class NapOnceTask implements JobTaskHandler<unknown, string> {
  run(_payload: unknown, ctx: JobContext) {
    ran(ctx);
    if (firstRunOver.has(ctx.id)) return 'awake';
    firstRunOver.add(ctx.id);
    return ctx.snooze(1);
  }
}

/** In the paused queue `held`. */
@JobTask({ name: 'life.held', queue: 'held' })
@Injectable()
class HeldTask implements JobTaskHandler<unknown, string> {
  run(_payload: unknown, ctx: JobContext) {
    ran(ctx);
    return 'released';
  }
}

/** Runs until its signal aborts on its first run (a shutdown's release), completes on the next. */
@JobTask('life.outlast')
@Injectable()
class OutlastTask implements JobTaskHandler<unknown, string> {
  async run(_payload: unknown, ctx: JobContext) {
    ran(ctx);
    if (!firstRunOver.has(ctx.id)) {
      firstRunOver.add(ctx.id);
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    }
    return 'outlasted';
  }
}

const setup = (options: AppSetup['options'] = {}): AppSetup => ({
  tasks: [StepTask, NapOnceTask, HeldTask, OutlastTask],
  options: { pollingCheck: 0.2, queues: { held: {} }, ...options },
});
const stateOf = async (app: JobsApp, id: string) => (await app.queue.getJob(id))?.state;

describe('on one instance', () => {
  let app: JobsApp;

  beforeAll(async () => {
    app = await startJobsApp(db.url, setup());
  });

  afterAll(() => app?.close());

  it('keeps a dependent blocked while its dependency is snoozed: a snooze is no end', async () => {
    const flow = await app.queue.addFlow({
      jobs: [
        { ref: 'nap', task: 'life.napOnce', maxRetries: 0 },
        { ref: 'after', task: 'life.step', dependsOn: ['nap'] },
      ],
    });
    await waitFor('the dependency to snooze', async () => {
      return (await db.historyOf(flow.jobs.nap))?.state === 'snoozed';
    });
    expect(await stateOf(app, flow.jobs.after)).toBe('blocked');
    await expect(app.queue.waitForJob(flow.jobs.after, { timeout: 30 })).resolves.toBe('done');
    // The snooze kept its attempt: the dependency ran twice as attempt 1, its dependent once.
    expect(runs.get(flow.jobs.nap)).toEqual([1, 1]);
    expect(runs.get(flow.jobs.after)).toEqual([1]);
  });

  it('holds an unblocked flow job in a paused queue until the queue is resumed', async () => {
    await app.queue.pauseQueue('held');
    try {
      const flow = await app.queue.addFlow({
        jobs: [
          { ref: 'first', task: 'life.step' },
          { ref: 'held', task: 'life.held', dependsOn: ['first'] },
        ],
      });
      await app.queue.waitForJob(flow.jobs.first, { timeout: 30 });
      expect(await stateOf(app, flow.jobs.held)).toBe('pending');
      // A job of the default queue added after it runs: the instance has claimed since, and left
      // the paused queue's job where it was.
      const { id } = await app.queue.addJob({ task: 'life.step' });
      await app.queue.waitForJob(id, { timeout: 30 });
      expect(await stateOf(app, flow.jobs.held)).toBe('pending');
      expect(runs.has(flow.jobs.held)).toBe(false);

      await app.queue.resumeQueue('held');
      await expect(app.queue.waitForJob(flow.jobs.held, { timeout: 30 })).resolves.toBe('released');
      expect(runs.get(flow.jobs.held)).toEqual([1]);
    } finally {
      await app.queue.resumeQueue('held');
    }
  });

  it('cancels blocked and pending flow jobs apart with cancelJobs', async () => {
    // In the paused queue: nothing of the flow runs while the test looks.
    await app.queue.pauseQueue('held');
    try {
      const flow = await app.queue.addFlow({
        jobs: [
          { ref: 'a', task: 'life.held' },
          { ref: 'b', task: 'life.held', dependsOn: ['a'], onDependencyFailure: 'run' },
          { ref: 'c', task: 'life.held', dependsOn: ['b'] },
        ],
      });
      const states = async () =>
        Promise.all(['a', 'b', 'c'].map((ref) => stateOf(app, flow.jobs[ref])));
      expect(await states()).toEqual(['pending', 'blocked', 'blocked']);

      // 'pending' takes a alone; b, whose policy is 'run', is then due (in its paused queue).
      expect(await app.queue.cancelJobs({ task: 'life.held', state: 'pending' })).toBe(1);
      expect(await states()).toEqual(['cancelled', 'pending', 'blocked']);
      expect(await app.queue.cancelJobs({ task: 'life.held', state: 'blocked' })).toBe(1);
      expect(await states()).toEqual(['cancelled', 'pending', 'cancelled']);
      expect(await app.queue.cancelJobs({ task: 'life.held' })).toBe(1);
      expect(await states()).toEqual(['cancelled', 'cancelled', 'cancelled']);
    } finally {
      await app.queue.resumeQueue('held');
    }
  });
});

it('requeues a flow job a shutdown released, and its dependent runs once after the restart', async () => {
  const first = await startJobsApp(db.url, setup({ shutdownTimeout: 0.2 }));
  const flow = await first.queue.addFlow({
    jobs: [
      { ref: 'outlast', task: 'life.outlast', maxRetries: 0 },
      { ref: 'after', task: 'life.step', dependsOn: ['outlast'] },
    ],
  });
  await waitFor('the dependency to start', () => runs.has(flow.jobs.outlast));
  await first.close();
  expect(await db.historyOf(flow.jobs.outlast)).toMatchObject({ state: 'interrupted' });
  const [queued] = await db.query(`SELECT retries FROM jobs.jobs WHERE id = $1`, [
    flow.jobs.outlast,
  ]);
  expect(queued).toEqual({ retries: 0 });
  const [blocked] = await db.query(`SELECT "blockedBy" FROM jobs.jobs WHERE id = $1`, [
    flow.jobs.after,
  ]);
  expect(blocked).toEqual({ blockedBy: 1 });

  const next = await startJobsApp(db.url, setup());
  try {
    await expect(next.queue.waitForJob(flow.jobs.after, { timeout: 30 })).resolves.toBe('done');
    expect(await next.queue.getJob(flow.jobs.outlast)).toMatchObject({
      state: 'completed',
      attempt: 1,
    });
    expect(runs.get(flow.jobs.outlast)).toEqual([1, 1]);
    expect(runs.get(flow.jobs.after)).toEqual([1]);
  } finally {
    await next.close();
  }
});
