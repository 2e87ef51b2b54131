import { Controller, Get, Inject } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import pg from 'pg';
import { Test } from '@nestjs/testing';
import { JobsError } from 'nestjs-pg-jobs';
import type { JobsModuleOptions } from 'nestjs-pg-jobs';
import { JobsHealthIndicator } from 'nestjs-pg-jobs/health';
import { healthSql } from '../../libs/jobs/src/health/health.sql.js';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import { WorkerPool } from '../../libs/jobs/src/worker-pool/worker-pool.js';
import { startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { quietLogger, startJobsApp, waitFor } from '../support/jobs-app.js';
import { planNodes } from '../support/query-plan.js';
import { useTestDatabase } from '../support/test-database.js';
import { THREAD_LOADER_EXEC_ARGV, WORKER_TASKS_MODULE } from '../support/worker-fixtures.js';

const db = useTestDatabase('jobs_health');

@Controller('health')
class HealthController {
  constructor(
    @Inject(HealthCheckService) private readonly health: HealthCheckService,
    @Inject(JobsHealthIndicator) private readonly jobs: JobsHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.jobs.isHealthy('jobs', { maxLag: 30, timeout: 0.5 })]);
  }
}

/** An app as a user sets one up: Terminus, a health endpoint, the indicator next to JobsModule. */
function startHealthApp(options: Partial<JobsModuleOptions> = {}) {
  return startHttpJobsApp(db.url, {
    // Terminus logs every failed check as an error: the failures here are the tests' own doing.
    imports: [TerminusModule.forRoot({ logger: false })],
    controllers: [HealthController],
    providers: [JobsHealthIndicator],
    options: { instanceId: 'health', pollingCheck: 0.2, allowUnknownTasks: true, ...options },
  });
}

async function health(app: HttpJobsApp) {
  const response = await fetch(`${app.url}/health`);
  const body = (await response.json()) as { details: { jobs: Record<string, unknown> } };
  return { status: response.status, jobs: body.details.jobs };
}

describe('GET /health', () => {
  let app: HttpJobsApp;
  beforeAll(async () => (app = await startHealthApp()));
  afterAll(() => app?.close());

  it('is up while the database answers, LISTEN is connected and nothing is overdue', async () => {
    expect(await health(app)).toEqual({
      status: 200,
      jobs: {
        status: 'up',
        database: 'up',
        listen: 'listening',
        workerPool: 'none',
        lag: 0,
        maxLag: 30,
      },
    });
  });

  it("is down while a due job waits longer than maxLag, and up again once it's gone", async () => {
    // A job of a task no instance runs, due for 45 s.
    const { id } = await app.queue.addJob({ task: 'nobody.runs.this' });
    await db.query(
      `UPDATE jobs.jobs SET "waitUntil" = now() - interval '45 seconds' WHERE id = $1`,
      [id],
    );
    const { status, jobs } = await health(app);
    expect(status).toBe(503);
    expect(jobs).toMatchObject({ status: 'down', database: 'up', listen: 'listening' });
    expect(jobs.lag).toBeGreaterThanOrEqual(45);
    expect(jobs.message).toMatch(/^the most overdue job fell due 4\d\.\d+s ago \(maxLag 30s\)$/);

    expect(await app.queue.cancelJob(id)).toBe(true);
    expect((await health(app)).status).toBe(200);
  });

  it('is down while its LISTEN connection is down, and up once it is back', async () => {
    const [{ name }] = await db.query<{ name: string }>('SELECT current_database() AS name');
    // No new connection to the database may be opened: the LISTEN session cannot come back. Said
    // from another database: a session cannot close the door of its own.
    const server = new pg.Client({ connectionString: process.env.JOBS_TEST_SERVER_URL });
    await server.connect();
    const allowConnections = (allow: boolean) =>
      server.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS ${allow}`);
    // The database stays up for the sessions the app's pool holds: a few opened now, so that
    // neither the check's probe nor the app's own background statements (an upkeep tick, the
    // per-minute writer) need a new one, which the closed door refuses, while the test runs.
    const database = app.app.get(JobsDatabase);
    await Promise.all(Array.from({ length: 4 }, () => database.query('SELECT pg_sleep(0.05)')));
    await allowConnections(false);
    try {
      await db.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND application_name LIKE '%health:listen'`,
      );
      const down = await waitFor('the check to see LISTEN down', async () => {
        const result = await health(app);
        return result.status === 503 && result;
      });
      expect(down.jobs).toMatchObject({
        status: 'down',
        database: 'up',
        listen: 'reconnecting',
        message: 'LISTEN is reconnecting',
      });
    } finally {
      await allowConnections(true);
      await server.end();
    }
    await waitFor('LISTEN to be back', async () => (await health(app)).status === 200);
    expect((await health(app)).jobs.listen).toBe('listening');
  });

  it('is down when the database does not answer within timeout', async () => {
    // The lag query waits behind this lock for as long as the test holds it.
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE jobs.jobs IN ACCESS EXCLUSIVE MODE');
      const { status, jobs } = await health(app);
      expect(status).toBe(503);
      expect(jobs).toMatchObject({
        status: 'down',
        database: 'down',
        lag: null,
        message: 'the database did not answer: no answer within 0.5s',
      });
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
  });
});

it('checks the worker pool of an instance that has one', async () => {
  const app = await startHealthApp({
    instanceId: 'health-workers',
    workerModule: WORKER_TASKS_MODULE,
    workerExecArgv: THREAD_LOADER_EXEC_ARGV,
    workers: 1,
  });
  try {
    expect((await health(app)).jobs).toMatchObject({ status: 'up', workerPool: 'up' });
    await app.app.get(WorkerPool).stop();
    expect(await health(app)).toMatchObject({
      status: 503,
      jobs: { workerPool: 'down', message: 'the worker pool is not ready' },
    });
  } finally {
    await app.close();
  }
});

it('reads the lag from the claim-order index, never from a scan of the queue', async () => {
  const app = await startJobsApp(db.url, { options: { runJobs: false, schema: 'lagplan' } });
  await app.close();
  await db.query('ALTER TABLE lagplan.jobs SET (autovacuum_enabled = false)');
  await db.query(
    `INSERT INTO lagplan.jobs (id, task, priority, "waitUntil", "maxRetries")
     SELECT gen_random_uuid(), 'queued', g % 5, now() - g * interval '1 second', 0
     FROM generate_series(1, 20000) g`,
  );
  const nodes = await planNodes(db, healthSql(toSchemaName('lagplan')).lag, []);
  expect(nodes.filter((node) => node['Relation Name'] === 'jobs')).not.toEqual([]);
  expect(
    nodes.filter((node) => node['Relation Name'] === 'jobs' && node['Node Type'] === 'Seq Scan'),
  ).toEqual([]);
  expect(
    nodes.filter((node) => node['Node Type'] === 'Sort' || node['Node Type'] === 'Aggregate'),
  ).toEqual([expect.objectContaining({ 'Node Type': 'Aggregate' })]);
  const [{ lag }] = await db.query<{ lag: number }>(healthSql(toSchemaName('lagplan')).lag);
  expect(Math.floor(lag)).toBe(20000);
});

it('fails the boot of an app without JobsModule, saying to import it', async () => {
  const boot = Test.createTestingModule({
    imports: [TerminusModule],
    providers: [JobsHealthIndicator],
  })
    .setLogger(quietLogger)
    .compile()
    .then((module) => module.init());
  await expect(boot).rejects.toThrow(JobsError);
  await expect(boot).rejects.toThrow(
    'JobsHealthIndicator found no JobsModule in this app: import JobsModule.forRoot()',
  );
});

it('refuses a maxLag that is not a positive number of seconds, naming it', async () => {
  const app = await startJobsApp(db.url, {
    imports: [TerminusModule],
    providers: [JobsHealthIndicator],
    options: { instanceId: 'health-options', runJobs: false },
  });
  const indicator = app.module.get(JobsHealthIndicator);
  await expect(indicator.isHealthy('jobs', { maxLag: -1 })).rejects.toThrow(
    'JobsHealthIndicator option "maxLag" must be a positive number of seconds; got -1.',
  );
  await app.close();
});
