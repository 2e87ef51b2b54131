import { Body, Controller, HttpCode, Inject, Injectable, Module, Post } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import pg from 'pg';
import { JobQueueService, JobTask, JobsModule } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { JobsNotIdleError, createTestDatabase, runUntilIdle } from 'nestjs-pg-jobs/testing';
import type { TestDatabase } from 'nestjs-pg-jobs/testing';
import { quietLogger } from '../support/jobs-app.js';

/**
 * `nestjs-pg-jobs/testing` used as docs/testing.md shows it: a fresh database from
 * `createTestDatabase()`, an app with a controller that enqueues, and `runUntilIdle()` between the
 * request and the assertions.
 */
@Injectable()
class Mailer {
  readonly sent: string[] = [];
  /** Holds every `send` while closed, so that a test can see a job running. */
  gate?: Promise<void>;

  async send(to: string, subject: string): Promise<void> {
    await this.gate;
    this.sent.push(`${subject} to ${to}`);
  }
}

@JobTask('sendWelcome')
@Injectable()
class SendWelcome implements JobTaskHandler<{ email: string }> {
  constructor(
    @Inject(Mailer) private readonly mailer: Mailer,
    @Inject(JobQueueService) private readonly queue: JobQueueService,
  ) {}

  async run({ email }: { email: string }): Promise<void> {
    await this.mailer.send(email, 'welcome');
    // A job that enqueues another: idle means both have run.
    await this.queue.addJob({ task: 'sendTips', payload: { email } });
  }
}

@JobTask('sendTips')
@Injectable()
class SendTips implements JobTaskHandler<{ email: string }> {
  constructor(@Inject(Mailer) private readonly mailer: Mailer) {}
  run({ email }: { email: string }): Promise<void> {
    return this.mailer.send(email, 'tips');
  }
}

@Controller('signup')
class SignupController {
  constructor(@Inject(JobQueueService) private readonly queue: JobQueueService) {}

  @Post()
  @HttpCode(202)
  async signup(@Body() body: { email: string }): Promise<{ queued: string }> {
    const { id } = await this.queue.addJob({ task: 'sendWelcome', payload: { email: body.email } });
    return { queued: id };
  }
}

function appModule(url: string) {
  @Module({
    // A poll far longer than any test here: jobs that start do so because something woke the runner.
    imports: [JobsModule.forRoot({ connection: url, pollingCheck: 300, allowUnknownTasks: true })],
    controllers: [SignupController],
    providers: [Mailer, SendWelcome, SendTips],
  })
  class AppModule {}
  return AppModule;
}

let db: TestDatabase;
let app: INestApplication;
let base: string;
let mailer: Mailer;

beforeAll(async () => {
  db = await createTestDatabase();
  const module = await Test.createTestingModule({ imports: [appModule(db.url)] })
    .setLogger(quietLogger)
    .compile();
  app = module.createNestApplication({ logger: quietLogger });
  await app.listen(0, '127.0.0.1');
  base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  mailer = app.get(Mailer);
});
afterAll(async () => {
  await app?.close();
  await db?.drop();
});
afterEach(() => {
  mailer.sent.length = 0;
});

const signup = (email: string) =>
  fetch(`${base}/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email }),
  });

it('runs the job a request enqueued, and the job that job enqueued, before the assertions', async () => {
  expect((await signup('ada@example.com')).status).toBe(202);
  await runUntilIdle(app);
  // Failed twice in a few hundred suite runs (runUntilIdle returned before the second job had
  // run), and never when watched: the rows, and the server's clock, say what it saw.
  if (mailer.sent.length !== 2) console.error('After runUntilIdle:', await jobRows());
  expect(mailer.sent).toEqual(['welcome to ada@example.com', 'tips to ada@example.com']);
});

/** Every job row and history row, with their times and the server's, for a failure to explain. */
async function jobRows(): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT 'queued' AS "where", id, task, NULL AS state, "waitUntil", "createdAt",
              NULL::timestamptz AS "startedAt", NULL::timestamptz AS "completedAt", clock_timestamp() AS now
       FROM jobs.jobs
       UNION ALL
       SELECT 'history', id, task, state, NULL, "createdAt", "startedAt", "completedAt", clock_timestamp()
       FROM jobs."jobHistory"`,
    );
    return rows;
  } finally {
    await client.end();
  }
}

it('waits for a job that is running, not only for due ones', async () => {
  let open!: () => void;
  mailer.gate = new Promise<void>((resolve) => (open = resolve));
  await signup('grace@example.com');
  const idle = runUntilIdle(app, { timeout: 0.3 });
  await expect(idle).rejects.toThrow(JobsNotIdleError);
  await expect(idle).rejects.toMatchObject({
    busy: [{ task: 'sendWelcome', state: 'active', count: 1 }],
  });
  open();
  mailer.gate = undefined;
  await runUntilIdle(app);
  expect(mailer.sent).toEqual(['welcome to grace@example.com', 'tips to grace@example.com']);
});

it('starts due jobs at once rather than on the next poll', async () => {
  // Not notified: with a 300 s poll, only runUntilIdle's wake-up starts it.
  await app
    .get(JobQueueService)
    .addJob({ task: 'sendTips', payload: { email: 'quiet@example.com' }, notify: false });
  await runUntilIdle(app, { timeout: 2 });
  expect(mailer.sent).toEqual(['tips to quiet@example.com']);
});

it('does not wait for jobs that are not due yet', async () => {
  const queue = app.get(JobQueueService);
  const { id } = await queue.addJob({
    task: 'sendTips',
    payload: { email: 'later@example.com' },
    waitUntil: new Date(Date.now() + 3_600_000),
  });
  await runUntilIdle(app, { timeout: 1 });
  expect(mailer.sent).toEqual([]);
  expect(await queue.cancelJob(id)).toBe(true);
});

it('fails naming the due jobs that nothing on this database runs', async () => {
  const queue = app.get(JobQueueService);
  const { id } = await queue.addJob({ task: 'nobodyRunsThis' });
  const idle = runUntilIdle(app, { timeout: 0.2 });
  await expect(idle).rejects.toThrow(
    /^Jobs were still due or running after 0\.2s \(runUntilIdle\): nobodyRunsThis: 1 pending\./,
  );
  expect(await queue.cancelJob(id)).toBe(true);
});

it('gives every caller a database of its own, which drop() removes', async () => {
  const other = await createTestDatabase({ prefix: 'kit_probe' });
  expect(other.name).toMatch(/^kit_probe_/);
  const databases = async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ datname: string }>(
        `SELECT datname FROM pg_database WHERE datname = $1`,
        [other.name],
      );
      return rows.length;
    } finally {
      await client.end();
    }
  };
  expect(await databases()).toBe(1);
  await other.drop();
  expect(await databases()).toBe(0);
});
