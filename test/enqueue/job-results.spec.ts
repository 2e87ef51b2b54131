import { Injectable } from '@nestjs/common';
import { JobFailedError, JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { NotificationListener } from '../../libs/jobs/src/notify/notification-listener.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { startWorkerApp } from '../support/worker-fixtures.js';

const db = useTestDatabase();

interface Invoice {
  number: string;
  total: number;
  lines: { sku: string; qty: number }[];
}

/** Returns what its payload names: a result of each kind a task can return. */
@JobTask('produce')
@Injectable()
class ProduceTask implements JobTaskHandler<{ kind: string; n?: number }, unknown> {
  run({ kind, n }: { kind: string; n?: number }): unknown {
    switch (kind) {
      case 'invoice':
        return {
          number: `INV-${n}`,
          total: 12.5,
          lines: [{ sku: 'ä-ß', qty: 2 }],
        } satisfies Invoice;
      case 'null':
        return null;
      case 'nothing':
        return undefined;
      case 'date':
        return new Date(Date.UTC(2026, 0, 2));
      case 'function':
        return { totals: [1, { format: () => '1' }] };
      case 'large':
        return { blob: 'x'.repeat(2000) };
      default:
        return Promise.resolve(n);
    }
  }
}

const MAX_RESULT_BYTES = 1000;
let runner: JobsApp;

beforeAll(async () => {
  runner = await startJobsApp(db.url, {
    tasks: [ProduceTask],
    options: { pollingCheck: 0.2, maxResultBytes: MAX_RESULT_BYTES, maxRetries: 0 },
  });
});

const historyResult = async (id: string) =>
  (
    await db.query<{ result: string | null }>(
      `SELECT result::text AS result FROM jobs."jobHistory" WHERE id = $1`,
      [id],
    )
  )[0].result;

it("resolves an awaited job's promise with what its task returned, and getJob reports it", async () => {
  const { id, promise } = await runner.queue.addJob<Invoice>({
    task: 'produce',
    payload: { kind: 'invoice', n: 7 },
    promise: true,
  });
  const invoice = await promise!;
  expect(invoice).toEqual({ number: 'INV-7', total: 12.5, lines: [{ sku: 'ä-ß', qty: 2 }] });
  expect(await runner.queue.getJob(id)).toMatchObject({ state: 'completed', result: invoice });
  expect(JSON.parse((await historyResult(id))!)).toEqual(invoice);
});

it('stores nothing for a task that returns nothing, and a JSON null for one that returns null', async () => {
  const nothing = await runner.queue.addJob({
    task: 'produce',
    payload: { kind: 'nothing' },
    promise: true,
  });
  const nullish = await runner.queue.addJob({
    task: 'produce',
    payload: { kind: 'null' },
    promise: true,
  });
  await expect(nothing.promise).resolves.toBeUndefined();
  await expect(nullish.promise).resolves.toBeNull();
  expect(await historyResult(nothing.id)).toBeNull();
  expect(await historyResult(nullish.id)).toBe('null');
  expect((await runner.queue.getJob(nothing.id))?.result).toBeNull();
});

it('stores the JSON of a result, as a payload would be (a Date becomes its ISO string)', async () => {
  const { promise } = await runner.queue.addJob({
    task: 'produce',
    payload: { kind: 'date' },
    promise: true,
  });
  await expect(promise).resolves.toBe('2026-01-02T00:00:00.000Z');
});

it('keeps each result with its own job when many complete in one batch', async () => {
  const added = await runner.queue.addJobs(
    Array.from({ length: 60 }, (_, n) => ({
      task: 'produce',
      // Every third returns nothing: NULLs and results side by side in one completion statement.
      payload: n % 3 === 0 ? { kind: 'nothing' } : { kind: 'number', n },
      promise: true,
    })),
  );
  const results = await Promise.all(added.map((job) => job.promise));
  expect(results).toEqual(Array.from({ length: 60 }, (_, n) => (n % 3 === 0 ? undefined : n)));
});

it('fails the attempt when the result is not JSON-safe, naming the path', async () => {
  const { id, promise } = await runner.queue.addJob({
    task: 'produce',
    payload: { kind: 'function' },
    promise: true,
  });
  await expect(promise).rejects.toThrow(JobFailedError);
  const job = await runner.queue.getJob(id);
  expect(job).toMatchObject({ state: 'failed', result: null });
  expect(job?.lastErrorMessage).toBe(
    'Job result is not JSON-serialisable: $.totals[1].format is a function. ' +
      'Return plain data (objects, arrays, strings, finite numbers, booleans, null).',
  );
});

it('fails the attempt when the result is larger than maxResultBytes', async () => {
  const { id, promise } = await runner.queue.addJob({
    task: 'produce',
    payload: { kind: 'large' },
    promise: true,
  });
  await expect(promise).rejects.toThrow(`over maxResultBytes (${MAX_RESULT_BYTES})`);
  const job = await runner.queue.getJob(id);
  expect(job?.lastErrorMessage).toMatch(/^Job result is 2011 bytes of JSON, over maxResultBytes/);
  expect(await historyResult(id)).toBeNull();
});

describe('an instance awaiting a job another one runs', () => {
  let producer: JobsApp;

  beforeAll(async () => {
    producer = await startJobsApp(db.url, {
      options: { runJobs: false, allowUnknownTasks: true, pollingCheck: 0.2 },
    });
  });

  it('resolves with the result, read from history: the notification does not carry it', async () => {
    const { promise } = await producer.queue.addJob<Invoice>({
      task: 'produce',
      payload: { kind: 'invoice', n: 8 },
      promise: true,
    });
    await expect(promise).resolves.toMatchObject({ number: 'INV-8' });
  });

  it('resolves with the result on polling alone when LISTEN is down', async () => {
    const listener = producer.module.get(NotificationListener, { strict: false });
    await listener.stop();
    try {
      const { promise } = await producer.queue.addJob({
        task: 'produce',
        payload: { kind: 'number', n: 9 },
        promise: true,
      });
      await expect(promise).resolves.toBe(9);
    } finally {
      await listener.start();
    }
  });
});

describe('worker tasks', () => {
  let workerApp: JobsApp;

  beforeAll(async () => {
    // Its own schema: the in-process runner above knows nothing of the worker tasks.
    workerApp = await startWorkerApp(db.url, {
      schema: 'worker_results',
      workers: 1,
      maxRetries: 0,
      maxResultBytes: MAX_RESULT_BYTES,
    });
  }, 60_000);

  it("store the result a pool thread sends back, and resolve the job's promise with it", async () => {
    const { id, promise } = await workerApp.queue.addJob({
      task: 'worker.greet',
      payload: { name: 'thread' },
      promise: true,
    });
    await expect(promise).resolves.toEqual({ greeted: 'thread' });
    expect((await workerApp.queue.getJob(id))?.result).toEqual({ greeted: 'thread' });
  }, 30_000);

  it('fail the attempt, in the thread, when the result is not JSON-safe or too large', async () => {
    const notJson = await workerApp.queue.addJob({
      task: 'worker.result',
      payload: { notJson: true },
      promise: true,
    });
    const large = await workerApp.queue.addJob({
      task: 'worker.result',
      payload: { result: 'y'.repeat(MAX_RESULT_BYTES) },
      promise: true,
    });
    await expect(notJson.promise).rejects.toThrow(
      'Job result is not JSON-serialisable: $.rows[1].at is a Map instance, not plain data.',
    );
    await expect(large.promise).rejects.toThrow(
      `Job result is ${MAX_RESULT_BYTES + 2} bytes of JSON, over maxResultBytes`,
    );
    const job = await waitFor('the failure in history', async () => {
      const info = await workerApp.queue.getJob(notJson.id);
      return info?.state === 'failed' && info;
    });
    expect(job.lastErrorMessage).toContain('$.rows[1].at is a Map instance');
  }, 30_000);
});
