import { Test } from '@nestjs/testing';
import type { INestApplication } from '@nestjs/common';
import { createTestDatabase, runUntilIdle } from 'nestjs-pg-jobs/testing';
import type { TestDatabase } from 'nestjs-pg-jobs/testing';
import { InvalidPayloadError, JobQueueService } from 'nestjs-pg-jobs';
import { Mailer } from '../src/mailer';
import { SendWelcome } from '../src/send-welcome.task';

// Stands in for the app's Mailer, and keeps what it was asked to send.
const mailer = {
  sent: [] as string[],
  send(to: string) {
    this.sent.push(to);
    return `sent to ${to}`;
  },
};
let db: TestDatabase;
let app: INestApplication;
// Booting takes longer than a runner's default hook timeout (5 s in Jest, 10 s in Vitest) on a busy
// machine, more so where an embedded PostgreSQL must start; a hook that times out leaves the app
// running, and the runner never exits.
const BOOT_TIMEOUT = 60_000;

beforeAll(async () => {
  db = await createTestDatabase();
  process.env.DATABASE_URL = db.url;
  // Loaded now, not at the top: `JobsModule.forRoot({ connection: process.env.DATABASE_URL })`
  // reads the variable when its module is evaluated (forRootAsync's factory reads it at boot).
  const { AppModule } = require('../src/app.module') as typeof import('../src/app.module');
  const module = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(Mailer)
    .useValue(mailer)
    .compile();
  app = module.createNestApplication();
  await app.listen(0);
}, BOOT_TIMEOUT);
afterAll(async () => {
  await app?.close();
  await db?.drop();
}, BOOT_TIMEOUT);

async function enqueue(task: string, payload: unknown) {
  const res = await fetch(`${await app.getUrl()}/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ task, payload }),
  });
  expect(res.status).toBe(201);
  return res.json();
}

it('runs an in-process task with its injected provider', async () => {
  expect((await enqueue('sendEmail', { to: 'ada@example.com' })).result).toBe(
    'sent to ada@example.com',
  );
  await runUntilIdle(app);
  expect(mailer.sent).toEqual(['ada@example.com']);
});

it('runs a worker task from its TypeScript source in a pool thread', async () => {
  const { result } = await enqueue('renderPdf', { id: '42' });
  expect(result.pdf).toBe('report-42.pdf');
  expect(result.thread).toBeGreaterThan(0);
});

it("checks a typed task's payload at enqueue and resolves with its result schema's output", async () => {
  const queue = app.get(JobQueueService);
  const { id, promise } = await queue.addJob({
    task: SendWelcome,
    payload: { to: 'grace@example.com' }, // the schema's input: `locale` has a default
    promise: true,
  });
  const result: { messageId: string } = await promise;
  expect(result).toEqual({ messageId: 'grace@example.com/en' });
  expect(mailer.sent).toContain('grace@example.com');
  expect((await queue.getJob<typeof SendWelcome>(id))?.result?.messageId).toBe(
    'grace@example.com/en',
  );

  // Refused before the insert: a pending job would hold its uniqueKey, and none does.
  const later = new Date(Date.now() + 3_600_000);
  const refused = await queue
    .addJob({
      task: SendWelcome,
      payload: { to: 'not an address' },
      uniqueKey: 'welcome',
      waitUntil: later,
    })
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(refused).toBeInstanceOf(InvalidPayloadError);
  expect((refused as InvalidPayloadError).path).toBe('$.to');
  const next = await queue.addJob({
    task: SendWelcome,
    payload: { to: 'lin@example.com' },
    uniqueKey: 'welcome',
    waitUntil: later,
  });
  expect(next.deduplicated).toBe(false);
  expect(await queue.cancelJob(next.id)).toBe(true);

  await expect(
    // @ts-expect-error `to` is required: the payload is typed as the schema's input
    queue.addJob({ task: SendWelcome, payload: { locale: 'fr' } }),
  ).rejects.toThrow(InvalidPayloadError);
});
