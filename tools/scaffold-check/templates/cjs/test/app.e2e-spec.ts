import { Test } from '@nestjs/testing';
import type { INestApplication } from '@nestjs/common';
import { createTestDatabase, runUntilIdle } from 'nestjs-pg-jobs/testing';
import type { TestDatabase } from 'nestjs-pg-jobs/testing';
import { Mailer } from '../src/mailer';

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
});
afterAll(async () => {
  await app?.close();
  await db?.drop();
});

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
