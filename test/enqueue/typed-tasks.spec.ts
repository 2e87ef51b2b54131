import { Injectable } from '@nestjs/common';
import {
  defineTask,
  InvalidJobTaskOptionError,
  InvalidPayloadError,
  JobFailedError,
  JobsAdminModule,
  JobTask,
  TaskSchemaError,
  UnknownTaskError,
} from 'nestjs-pg-jobs';
import type {
  JobTaskHandler,
  StandardSchemaV1,
  TaskPayload,
  TaskResultInput,
} from 'nestjs-pg-jobs';
import * as v from 'valibot';
import { z } from 'zod';
import { startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

/** zod 4: a default in the payload, a default in the result (what is stored is the output). */
const SendEmail = defineTask({
  name: 'typed.sendEmail',
  maxRetries: 3,
  payloadSchema: z.object({ to: z.email(), locale: z.string().default('en') }),
  resultSchema: z.object({ messageId: z.string(), provider: z.string().default('smtp') }),
});

/** valibot 1: a transform (a string in, a number to the handler). */
const Resize = defineTask({
  name: 'typed.resize',
  maxRetries: 3,
  payloadSchema: v.object({ width: v.pipe(v.string(), v.transform(Number)) }),
  resultSchema: v.object({ area: v.number() }),
});

/**
 * A hand-written Standard Schema, asynchronous (as one that looks something up would be): a
 * payload `{ sku }` whose sku is on the list.
 */
const KNOWN_SKUS = new Set(['A-1', 'B-2']);
const skuSchema: StandardSchemaV1<{ sku: string }> = {
  '~standard': {
    version: 1,
    vendor: 'hand-written',
    validate: async (value) => {
      await new Promise((resolve) => setImmediate(resolve));
      const sku = (value as { sku?: unknown } | null)?.sku;
      if (typeof sku !== 'string')
        return { issues: [{ message: 'must be a string', path: ['sku'] }] };
      if (!KNOWN_SKUS.has(sku))
        return { issues: [{ message: `unknown sku ${sku}`, path: [{ key: 'sku' }] }] };
      return { value: { sku } };
    },
  },
};
const Restock = defineTask({ name: 'typed.restock', payloadSchema: skuSchema });

const seen: Record<string, unknown[]> = {};
const saw = (task: string, payload: unknown) => (seen[task] ??= []).push(payload);

@JobTask(SendEmail)
@Injectable()
class SendEmailHandler implements JobTaskHandler<typeof SendEmail> {
  run(payload: TaskPayload<typeof SendEmail>): TaskResultInput<typeof SendEmail> {
    saw('sendEmail', payload);
    // `bad@` asks for a result the resultSchema refuses.
    if (payload.to.startsWith('bad-result')) return { messageId: 42 as unknown as string };
    return { messageId: `<${payload.to}>` };
  }
}

@JobTask(Resize)
@Injectable()
class ResizeHandler implements JobTaskHandler<typeof Resize> {
  run(payload: TaskPayload<typeof Resize>) {
    saw('resize', payload);
    return { area: payload.width * payload.width };
  }
}

@JobTask(Restock)
@Injectable()
class RestockHandler implements JobTaskHandler<typeof Restock> {
  run(payload: TaskPayload<typeof Restock>) {
    saw('restock', payload);
  }
}

let runner: HttpJobsApp;
/** Enqueues only, with no handler and no allowUnknownTasks: it knows the tasks by their definitions. */
let producer: JobsApp;
/** Enqueues only, accepting any task name: what an older deploy, without the schemas, did. */
let legacy: JobsApp;

beforeAll(async () => {
  runner = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ path: 'admin', guard: { canActivate: () => true } })],
    tasks: [SendEmailHandler, ResizeHandler, RestockHandler],
    options: { pollingCheck: 0.2, instanceId: 'runner' },
  });
  producer = await startJobsApp(db.url, { options: { runJobs: false, instanceId: 'producer' } });
  legacy = await startJobsApp(db.url, {
    options: { runJobs: false, allowUnknownTasks: true, instanceId: 'legacy' },
  });
});

afterAll(() => runner?.close());

const jobsOf = async (task: string) =>
  Number(
    (
      await db.query<{ n: string }>(
        `SELECT (SELECT count(*) FROM jobs.jobs WHERE task = $1) +
                (SELECT count(*) FROM jobs."jobHistory" WHERE task = $1) AS n`,
        [task],
      )
    )[0].n,
  );

const ended = (id: string) =>
  waitFor(`job ${id} to end`, async () => {
    const row = await db.historyOf(id);
    return row && row.state !== 'active' && row;
  });

describe('at enqueue', () => {
  it('refuses a payload its schema refuses, with the issues, and inserts nothing', async () => {
    const before = await jobsOf(SendEmail.name);
    const adding = producer.queue.addJob({ task: SendEmail, payload: { to: 'not an address' } });
    await expect(adding).rejects.toThrow(InvalidPayloadError);
    const error = (await adding.catch((err: unknown) => err)) as InvalidPayloadError;
    expect(error.issues).toEqual([
      expect.objectContaining({ path: ['to'], message: 'Invalid email address' }),
    ]);
    expect(error.path).toBe('$.to');
    expect(error.index).toBeUndefined();
    expect(error.message).toContain('task "typed.sendEmail": $.to: Invalid email address');
    expect(await jobsOf(SendEmail.name)).toBe(before);
  });

  it('refuses a whole batch for one bad payload, naming its index', async () => {
    const before = await jobsOf(Resize.name);
    const adding = runner.queue.addJobs([
      { task: Resize, payload: { width: '10' } },
      { task: Resize, payload: { width: 10 as unknown as string } },
      { task: 'typed.resize', payload: { width: 12 } },
    ]);
    const error = (await adding.catch((err: unknown) => err)) as InvalidPayloadError;
    expect(error).toBeInstanceOf(InvalidPayloadError);
    expect(error.index).toBe(1);
    expect(error.issues[0].path?.map((segment) => (segment as { key: unknown }).key)).toEqual([
      'width',
    ]);
    expect(error.message).toContain('job 1 of the batch');
    expect(await jobsOf(Resize.name)).toBe(before);
  });

  it('awaits an asynchronous schema, a hand-written one, before inserting', async () => {
    const before = await jobsOf(Restock.name);
    const refused = producer.queue.addJobs([
      { task: Restock, payload: { sku: 'A-1' } },
      { task: Restock, payload: { sku: 'Z-9' } },
    ]);
    await expect(refused).rejects.toMatchObject({
      name: 'InvalidPayloadError',
      index: 1,
      issues: [{ message: 'unknown sku Z-9', path: [{ key: 'sku' }] }],
    });
    expect(await jobsOf(Restock.name)).toBe(before);
    const { id, promise } = await producer.queue.addJob({
      task: Restock,
      payload: { sku: 'B-2' },
      promise: true,
    });
    await promise;
    expect(seen.restock).toContainEqual({ sku: 'B-2' });
    expect((await db.historyOf(id))?.state).toBe('completed');
  });

  it('checks a task name too, on an instance that has its handler; elsewhere the name is unknown', async () => {
    await expect(
      runner.queue.addJob({ task: 'typed.sendEmail', payload: { to: 'nope' } }),
    ).rejects.toThrow(InvalidPayloadError);
    await expect(
      producer.queue.addJob({ task: 'typed.sendEmail', payload: { to: 'a@example.com' } }),
    ).rejects.toThrow(UnknownTaskError);
  });

  it('stores the payload as given, not the schema output', async () => {
    const { id } = await producer.queue.addJob({
      task: Resize,
      payload: { width: '3' },
      waitUntil: new Date(Date.now() + 3_600_000),
    });
    const [row] = await db.query<{ payload: unknown }>(
      'SELECT payload FROM jobs.jobs WHERE id = $1',
      [id],
    );
    expect(row.payload).toEqual({ width: '3' });
    expect(await producer.queue.cancelJob(id)).toBe(true);
  });

  it('refuses a schema that is not a Standard Schema, naming the definition', () => {
    expect(() =>
      defineTask({ name: 'typed.broken', payloadSchema: { parse: () => 1 } as never }),
    ).toThrow(InvalidJobTaskOptionError);
    expect(() =>
      defineTask({ name: 'typed.broken', payloadSchema: { parse: () => 1 } as never }),
    ).toThrow('defineTask("typed.broken")');
  });
});

describe('at run', () => {
  it('gives the handler the schema output (defaults, transforms), and resolves with the result schema output', async () => {
    const { id, promise } = await producer.queue.addJob({
      task: SendEmail,
      payload: { to: 'ada@example.com' },
      promise: true,
    });
    expect(await promise).toEqual({ messageId: '<ada@example.com>', provider: 'smtp' });
    expect(seen.sendEmail).toContainEqual({ to: 'ada@example.com', locale: 'en' });
    expect((await producer.queue.getJob<typeof SendEmail>(id))?.result).toEqual({
      messageId: '<ada@example.com>',
      provider: 'smtp',
    });
    expect(await producer.queue.waitForJob<typeof SendEmail>(id)).toEqual({
      messageId: '<ada@example.com>',
      provider: 'smtp',
    });

    const resized = await runner.queue.addJob({
      task: Resize,
      payload: { width: '7' },
      promise: true,
    });
    expect(await resized.promise).toEqual({ area: 49 });
    expect(seen.resize).toContainEqual({ width: 7 });
  });

  it('fails a stored payload the schema now refuses, with no retry, naming the issues', async () => {
    const { id, promise } = await legacy.queue.addJob({
      task: 'typed.sendEmail',
      payload: { to: 'ada@example.com', locale: 7 },
      promise: true,
    });
    await expect(promise).rejects.toThrow(JobFailedError);
    const row = await ended(id);
    expect(row).toMatchObject({ state: 'failed', attempt: 1 });
    expect(row.lastErrorMessage).toContain('payloadSchema of task "typed.sendEmail"');
    expect(row.lastErrorMessage).toContain(
      '$.locale: Invalid input: expected string, received number',
    );
    expect(seen.sendEmail).not.toContainEqual(expect.objectContaining({ locale: 7 }));
  });

  it('fails a result the result schema refuses, with no retry, and stores no result', async () => {
    const { id, promise } = await producer.queue.addJob({
      task: SendEmail,
      payload: { to: 'bad-result@example.com' },
      promise: true,
    });
    await expect(promise).rejects.toThrow('returned a result that does not match its resultSchema');
    const row = await ended(id);
    expect(row).toMatchObject({ state: 'failed', attempt: 1 });
    expect(row.lastErrorMessage).toContain(
      '$.messageId: Invalid input: expected string, received number',
    );
    expect((await producer.queue.getJob(id))?.result).toBeNull();
  });

  it('fails with a TaskSchemaError, an UnrecoverableJobError', () => {
    const error = new TaskSchemaError('t', 'payload', [{ message: 'm', path: ['a', 0] }]);
    expect(error.message).toContain('$.a[0]: m');
    expect(error.issues).toEqual([{ message: 'm', path: ['a', 0] }]);
  });
});

describe('the admin API', () => {
  it("lists each task with its payload's input JSON Schema, where its library gives one", async () => {
    const response = await fetch(`${runner.url}/admin/api/tasks`);
    expect(response.status).toBe(200);
    const { tasks } = (await response.json()) as {
      tasks: { name: string; payloadJsonSchema: Record<string, unknown> | null }[];
    };
    const byName = new Map(tasks.map((task) => [task.name, task]));
    expect(byName.get('typed.sendEmail')?.payloadJsonSchema).toMatchObject({
      type: 'object',
      properties: {
        to: { type: 'string', format: 'email' },
        locale: { type: 'string', default: 'en' },
      },
      required: ['to'],
    });
    // valibot 1 and the hand-written schema provide no JSON Schema.
    expect(byName.get('typed.resize')?.payloadJsonSchema).toBeNull();
    expect(byName.get('typed.restock')?.payloadJsonSchema).toBeNull();
  });
});
