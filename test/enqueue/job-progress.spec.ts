import { Injectable } from '@nestjs/common';
import { JobEventsService, JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobProgressEvent, JobTaskHandler } from 'nestjs-pg-jobs';
import { openGate } from '../fixtures/workers/report.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { startWorkerApp } from '../support/worker-fixtures.js';

const db = useTestDatabase();

/** Tasks waiting for the test to let them go on, by job id. */
const gates = new Map<string, () => void>();
const gate = (id: string) => new Promise<void>((resolve) => gates.set(id, resolve));
const reportsMade = new Map<string, number>();

/** Reports `first`, waits for the test, reports `last`. */
@JobTask('stepper')
@Injectable()
class StepperTask implements JobTaskHandler<{ first: number; last: Record<string, unknown> }> {
  async run(payload: { first: number; last: Record<string, unknown> }, ctx: JobContext) {
    ctx.reportProgress(payload.first);
    await gate(ctx.id);
    ctx.reportProgress(payload.last);
  }
}

/** Reports a rising count once per turn of the event loop for `ms`, then 100 and ends at once. */
@JobTask('counter')
@Injectable()
class CounterTask implements JobTaskHandler<{ ms: number }> {
  async run(payload: { ms: number }, ctx: JobContext) {
    let reports = 0;
    ctx.reportProgress({ done: reports });
    const end = Date.now() + payload.ms;
    while (Date.now() < end) {
      ctx.reportProgress({ done: ++reports });
      await new Promise((resolve) => setImmediate(resolve));
    }
    ctx.reportProgress(100);
    reportsMade.set(ctx.id, reports + 2);
  }
}

const BAD_VALUES: Record<string, unknown> = {
  over100: 101,
  negative: -1,
  notANumber: NaN,
  array: [1, 2],
  string: 'half',
  notJson: { when: new Map() },
  tooLarge: { blob: 'z'.repeat(16_384) },
};

/** Reports one of `BAD_VALUES` and returns what `reportProgress` threw. */
@JobTask('badProgress')
@Injectable()
class BadProgressTask implements JobTaskHandler<{ value: string }, string> {
  run(payload: { value: string }, ctx: JobContext): string {
    try {
      ctx.reportProgress(BAD_VALUES[payload.value] as number);
      return 'accepted';
    } catch (err) {
      return `${(err as Error).name}: ${(err as Error).message}`;
    }
  }
}

const PROGRESS_INTERVAL = 0.3;
let runner: JobsApp;
let observer: JobsApp;
const heardBy = { runner: [] as JobProgressEvent[], observer: [] as JobProgressEvent[] };

beforeAll(async () => {
  runner = await startJobsApp(db.url, {
    tasks: [StepperTask, CounterTask, BadProgressTask],
    options: { pollingCheck: 0.2, progressInterval: PROGRESS_INTERVAL, maxRetries: 0 },
  });
  observer = await startJobsApp(db.url, {
    options: { runJobs: false, allowUnknownTasks: true, pollingCheck: 0.2 },
  });
  for (const name of ['runner', 'observer'] as const) {
    const app = name === 'runner' ? runner : observer;
    app.module
      .get(JobEventsService)
      .on('progress')
      .subscribe((event) => heardBy[name].push(event));
  }
});

const heard = (by: keyof typeof heardBy, id: string) =>
  heardBy[by].filter((event) => event.id === id).map((event) => event.progress);

it('writes progress while the attempt runs, and every instance hears it as an event', async () => {
  // Over the 1 KiB a notification carries: the observer reads it from history.
  const last = { stage: 'indexed', detail: 'w'.repeat(2000) };
  const { id, promise } = await observer.queue.addJob({
    task: 'stepper',
    payload: { first: 40, last },
    promise: true,
  });
  await waitFor('the observer to hear 40', () => heard('observer', id).length === 1);
  expect(await observer.queue.getJob(id)).toMatchObject({ state: 'active', progress: 40 });
  expect(heard('runner', id)).toEqual([40]);
  expect(heardBy.observer.find((event) => event.id === id)).toMatchObject({
    task: 'stepper',
    attempt: 1,
  });

  gates.get(id)!();
  await promise;
  expect(await observer.queue.getJob(id)).toMatchObject({ state: 'completed', progress: last });
  await waitFor('the observer to hear the last value', () => heard('observer', id).length === 2);
  expect(heard('observer', id)).toEqual([40, last]);
  expect(heard('runner', id)).toEqual([40, last]);
});

it('writes at most once per progressInterval however often the task reports, and the last value always', async () => {
  const ms = 1200;
  const { id, promise } = await runner.queue.addJob({
    task: 'counter',
    payload: { ms },
    promise: true,
  });
  await promise;
  const writes = heard('runner', id);
  // The first report is written at once, then at most one per interval, then the last one at the end.
  expect(writes.length).toBeGreaterThanOrEqual(2);
  expect(writes.length).toBeLessThanOrEqual(2 + Math.ceil(ms / 1000 / PROGRESS_INTERVAL));
  expect(reportsMade.get(id)).toBeGreaterThan(10 * writes.length);
  expect(writes.at(-1)).toBe(100);
  expect((await runner.queue.getJob(id))?.progress).toBe(100);
});

it('writes the last value when the attempt ends inside the interval, before the ending', async () => {
  const { id, promise } = await runner.queue.addJob({
    task: 'counter',
    payload: { ms: 0 },
    promise: true,
  });
  await promise;
  // Written by the attempt's end: a write waiting out the interval would have found it ended.
  expect((await runner.queue.getJob(id))?.progress).toBe(100);
  expect(heard('runner', id)).toEqual([{ done: 0 }, 100]);
});

it.each([
  ['over100', 'ctx.reportProgress() takes a number from 0 to 100 or a plain JSON object; got 101.'],
  ['negative', 'takes a number from 0 to 100 or a plain JSON object; got -1.'],
  ['notANumber', 'takes a number from 0 to 100 or a plain JSON object; got NaN.'],
  ['array', 'takes a number from 0 to 100 or a plain JSON object; got [1,2].'],
  ['string', 'takes a number from 0 to 100 or a plain JSON object; got "half".'],
  ['notJson', 'ctx.reportProgress() takes JSON, but $.when is a Map instance, not plain data'],
  ['tooLarge', 'takes at most 16384 bytes of JSON; got "16395 bytes of JSON".'],
])('refuses %s with InvalidContextArgumentError, writing nothing', async (value, message) => {
  const { id, promise } = await runner.queue.addJob<string>({
    task: 'badProgress',
    payload: { value },
    promise: true,
  });
  const thrown = await promise!;
  expect(thrown).toMatch(/^InvalidContextArgumentError: /);
  expect(thrown).toContain(message);
  expect((await runner.queue.getJob(id))?.progress).toBeNull();
});

describe('a worker task', () => {
  let workerApp: JobsApp;
  const workerHeard: JobProgressEvent[] = [];

  beforeAll(async () => {
    workerApp = await startWorkerApp(db.url, { schema: 'worker_progress', workers: 1 });
    workerApp.module
      .get(JobEventsService)
      .on('progress')
      .subscribe((event) => workerHeard.push(event));
  }, 60_000);

  it('reports progress from its thread while it runs, and its last value when it ends', async () => {
    const { id, promise } = await workerApp.queue.addJob<string>({
      task: 'worker.progress',
      payload: { first: 25, last: { stage: 'rendered', pages: 12 } },
      promise: true,
    });
    await waitFor('progress from the thread', () => workerHeard.some((e) => e.id === id));
    expect(await workerApp.queue.getJob(id)).toMatchObject({ state: 'active', progress: 25 });
    openGate(id);
    await expect(promise).resolves.toBe('done');
    expect((await workerApp.queue.getJob(id))?.progress).toEqual({ stage: 'rendered', pages: 12 });
    expect(workerHeard.filter((e) => e.id === id).map((e) => e.progress)).toEqual([
      25,
      { stage: 'rendered', pages: 12 },
    ]);
  }, 30_000);
});
