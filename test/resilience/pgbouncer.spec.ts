import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import pg from 'pg';
import {
  InstanceIdInUseError,
  JobFailedError,
  JobTask,
  ReaperService,
  SchemaNotMigratedError,
} from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler, JobsModuleOptions } from 'nestjs-pg-jobs';
import { TerminusModule } from '@nestjs/terminus';
import { JobsHealthIndicator } from 'nestjs-pg-jobs/health';
import { FlakyTask } from '../support/flaky-task.js';
import { quietLogger, startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { pgBouncerUnavailable, startPgBouncer } from '../support/pgbouncer.js';
import type { PgBouncer } from '../support/pgbouncer.js';
import { describeWhereAvailable } from '../support/required-suite.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_pgbouncer');
let bouncer: PgBouncer;
/** The test database, reached through PgBouncer in transaction mode. */
let pooledUrl: string;

const warnings: { context: string; message: string }[] = [];
const warn = quietLogger.warn;
quietLogger.warn = (message: unknown, context?: unknown) => {
  warnings.push({ context: String(context), message: String(message) });
  return warn(message, context);
};

/** Each run of `pooled.record`, in order: which job, which attempt, which instance. */
const runs: { id: string; attempt: number; instance: string }[] = [];

@JobTask('pooled.record')
@Injectable()
class RecordTask implements JobTaskHandler {
  run(_payload: unknown, ctx: JobContext): void {
    runs.push({ id: ctx.id, attempt: ctx.attempt, instance: 'pooled' });
  }
}

@JobTask({ name: 'pooled.everySecond', cron: '* * * * * *' })
@Injectable()
class EverySecond implements JobTaskHandler {
  run(_payload: unknown, ctx: JobContext): void {
    runs.push({ id: ctx.id, attempt: ctx.attempt, instance: 'cron' });
  }
}

/** What every instance behind the pooler needs: no named prepared statements (PgBouncer 1.18). */
const POOLED: Partial<JobsModuleOptions> = { preparedStatements: false, pollingCheck: 0.2 };

function startPooledApp(options: Partial<JobsModuleOptions> = {}, tasks = [RecordTask]) {
  return startJobsApp(pooledUrl, { tasks, options: { ...POOLED, ...options } });
}

/** Advisory locks held in the test database, by any session. */
async function advisoryLocks(): Promise<number> {
  const [{ n }] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_locks
     WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  return n;
}

// On a machine without PgBouncer, the suite's beforeAll installs it first (hence its long timeout).
describeWhereAvailable({
  file: 'test/resilience/pgbouncer.spec.ts',
  requiredBy: 'REQUIRE_PGBOUNCER',
  unavailable: pgBouncerUnavailable,
  howToRun: 'Install the Debian package pgbouncer (apt-get install -y pgbouncer) to run it',
})('behind a real PgBouncer in transaction mode', () => {
  beforeAll(async () => {
    bouncer = await startPgBouncer(process.env.JOBS_TEST_SERVER_URL!, { poolMode: 'transaction' });
    pooledUrl = bouncer.rewrite(db.url);
    // Migrations run on a direct connection, as docs/operations.md says to: one instance booted directly.
    const direct = await startJobsApp(db.url, { options: { runJobs: false } });
    await direct.close();
  }, 300_000);
  // After useTestDatabase's own afterAll, which closes the apps: they need the pooler to shut down.
  afterAll(() => bouncer?.stop());

  it('runs behind a real PgBouncer in transaction mode', async () => {
    const config = await bouncer.admin<{ key: string; value: string }>('SHOW CONFIG');
    expect(config.find((row) => row.key === 'pool_mode')?.value).toBe('transaction');
  });

  describe('behind the pooler, with preparedStatements: false and on polling alone', () => {
    let app: JobsApp;
    beforeAll(async () => {
      warnings.length = 0;
      app = await startPooledApp({ retryBackoff: 0, instanceId: 'pooled' }, [
        RecordTask,
        FlakyTask,
      ]);
    });
    afterAll(() => app?.close());

    it('says at boot that LISTEN is unavailable, and why', () => {
      expect(warnings).toContainEqual({
        context: 'JobsNotifications',
        message: expect.stringMatching(
          /^LISTEN is unavailable: the connection goes through a transaction-mode pooler \(such as PgBouncer\).*Running on polling alone/,
        ),
      });
    });

    it('enqueues, claims and runs a job, and settles its awaited promise', async () => {
      const { id, promise } = await app.queue.addJob({ task: 'pooled.record', promise: true });
      await promise;
      expect(runs.filter((run) => run.id === id)).toEqual([{ id, attempt: 1, instance: 'pooled' }]);
      expect(await app.queue.getJob(id)).toMatchObject({
        state: 'completed',
        executedBy: 'pooled',
      });
    });

    it('retries a failed attempt, and rejects the promise of a job that fails for good', async () => {
      const retried = await app.queue.addJob({
        task: 'flaky',
        payload: { failUntilAttempt: 1 },
        promise: true,
      });
      await retried.promise;
      expect(await app.queue.getJob(retried.id)).toMatchObject({ state: 'completed', attempt: 2 });

      const doomed = await app.queue.addJob({
        task: 'flaky',
        payload: { failUntilAttempt: 9, message: 'always' },
        maxRetries: 1,
        promise: true,
      });
      await expect(doomed.promise).rejects.toThrow(JobFailedError);
      expect(await app.queue.getJob(doomed.id)).toMatchObject({
        state: 'failed',
        attempt: 2,
        lastErrorMessage: 'always',
      });
    });

    it('is healthy, LISTEN polling by design, to JobsHealthIndicator', async () => {
      const checked = await startJobsApp(pooledUrl, {
        imports: [TerminusModule.forRoot({ logger: false })],
        providers: [JobsHealthIndicator],
        options: { ...POOLED, instanceId: 'pooled-health', runJobs: false },
      });
      expect(await checked.module.get(JobsHealthIndicator).isHealthy()).toEqual({
        jobs: expect.objectContaining({ status: 'up', database: 'up', listen: 'polling' }),
      });
      await checked.close();
    });

    it("has the reaper requeue a dead instance's job, which then runs here", async () => {
      // An attempt an instance that died an hour ago left active: no heartbeat, no registration.
      const id = randomUUID();
      await db.query(
        `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "executedBy", "createdAt", "startedAt")
         VALUES ($1, 'pooled.record', 'active', 1, 5, 'dead-instance', now() - interval '1 hour', now() - interval '1 hour')`,
        [id],
      );
      expect(await app.module.get(ReaperService).reapStaleJobs()).toBe(1);
      await waitFor('the requeued job to run', () => runs.some((run) => run.id === id));
      await waitFor(
        'its second attempt to be recorded completed',
        async () => (await app.queue.getJob(id))?.state === 'completed',
      );
      expect(await app.queue.getJob(id)).toMatchObject({ attempt: 2, executedBy: 'pooled' });
    });
  });

  it("runs a cron schedule's slots, planned and claimed through the pooler", async () => {
    const app = await startPooledApp({ instanceId: 'pooled-cron', scheduledCheck: 1 }, [
      EverySecond,
    ]);
    try {
      await waitFor(
        'two slots of the every-second schedule to run',
        () => runs.filter((run) => run.instance === 'cron').length >= 2,
        15_000,
      );
      const ids = runs.filter((run) => run.instance === 'cron').map((run) => run.id);
      const slots = await db.query<{ slot: Date }>(
        `SELECT slot FROM jobs."jobScheduleSlot" WHERE "jobId" = ANY($1::uuid[])`,
        [ids],
      );
      expect(new Set(slots.map((row) => row.slot.getTime())).size).toBe(ids.length);
    } finally {
      await app.close();
    }
  });

  describe('migrations', () => {
    it('a session advisory lock taken through the pooler outlives the client that took it', async () => {
      // Why the migrator does not take its lock through a pooler: the server connection keeps it.
      const client = new pg.Client({ connectionString: pooledUrl });
      await client.connect();
      await client.query(`SELECT pg_advisory_lock(hashtextextended('pooler-demo', 0))`);
      await client.end();
      expect(await advisoryLocks()).toBe(1);
      // Closing the pooler's server connections is what releases it.
      await bouncer.admin('RECONNECT');
      await waitFor('the pooler to close its server connections', async () => {
        await new pg.Client({ connectionString: pooledUrl }).connect().then((c) => c.end());
        return (await advisoryLocks()) === 0;
      });
    });

    it('refuses to migrate through the pooler, says to migrate on a direct connection, and leaves no lock', async () => {
      const boot = startPooledApp({ schema: 'fresh' });
      await expect(boot).rejects.toThrow(SchemaNotMigratedError);
      await expect(boot).rejects.toThrow(
        /Schema "fresh" needs migrations, and this connection goes through a transaction-mode pooler.*Migrate on a direct connection to PostgreSQL: `npx nestjs-pg-jobs migrate --connection <direct url> --schema fresh`/,
      );
      const [{ migrated }] = await db.query<{ migrated: boolean }>(
        `SELECT to_regclass('fresh.migrations') IS NOT NULL AS migrated`,
      );
      expect(migrated).toBe(false);
      expect(await advisoryLocks()).toBe(0);
    });

    it('boots through the pooler with migrate: true once the schema is current, taking no lock', async () => {
      await startJobsApp(db.url, { options: { schema: 'current', runJobs: false } }).then((app) =>
        app.close(),
      );
      const app = await startPooledApp({ schema: 'current', migrate: true });
      expect(await advisoryLocks()).toBe(0);
      await app.close();
    });
  });

  describe('the instance id', () => {
    const id = { heartbeatInterval: 0.2, instanceTimeout: 2 };

    it('is not locked behind the pooler: a live twin is refused by its heartbeat instead', async () => {
      warnings.length = 0;
      const first = await startPooledApp({ ...id, instanceId: 'pooled-twin' });
      expect(warnings).toContainEqual({
        context: 'JobsInstances',
        message: expect.stringMatching(
          /^Instance id pooled-twin is not locked: .*transaction-mode pooler/,
        ),
      });
      expect(await advisoryLocks()).toBe(0);

      const twin = startPooledApp({ ...id, instanceId: 'pooled-twin' });
      await expect(twin).rejects.toThrow(InstanceIdInUseError);
      await expect(twin).rejects.toThrow(
        /Instance id "pooled-twin" is in use by a running instance/,
      );
      // The first one still runs jobs.
      const { promise } = await first.queue.addJob({ task: 'pooled.record', promise: true });
      await promise;
      await first.close();

      // A clean shutdown removed its row: the id is free at once.
      const successor = await startPooledApp({ ...id, instanceId: 'pooled-twin' });
      await successor.close();
    });

    it("boots under a crashed instance's id once that one's heartbeat is instanceTimeout old", async () => {
      // What a crash behind the pooler leaves: a fresh heartbeat, and no lock to tell it is dead.
      const [{ crashedAt }] = await db.query<{ crashedAt: string }>(
        `INSERT INTO jobs.instances (id, hostname, pid, "instanceTimeout") VALUES ('pooled-phoenix', 'elsewhere', 1, 2)
         RETURNING "heartbeatAt"::text AS "crashedAt"`,
      );
      const successor = await startPooledApp({ ...id, instanceId: 'pooled-phoenix' });
      const [{ waited }] = await db.query<{ waited: number }>(
        `SELECT extract(epoch FROM "startedAt" - $1::timestamptz)::float8 AS waited
         FROM jobs.instances WHERE id = 'pooled-phoenix'`,
        [crashedAt],
      );
      expect(waited).toBeGreaterThanOrEqual(2);
      await successor.close();
    });
  });
});
