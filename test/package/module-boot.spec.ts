import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  InvalidCronExpressionError,
  InvalidModuleOptionError,
  InvalidTaskHandlerError,
  InvalidTimeZoneError,
  JobQueueService,
  JobTask,
  JobsModule,
  SchemaNotMigratedError,
  UnknownTaskError,
} from 'nestjs-pg-jobs';
import type { JobsModuleOptions } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { recording } from '../support/recorder.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

async function boot(options: Partial<JobsModuleOptions>, providers: unknown[] = []) {
  const module = await Test.createTestingModule({
    imports: [JobsModule.forRoot({ connection: db.url, ...options } as JobsModuleOptions)],
    providers: providers as never[],
  })
    .setLogger(false as never)
    .compile();
  await module.init();
  return module;
}

describe('a bad module option fails the boot with a message naming the option and the value', () => {
  it.each([
    [{ pollingCheck: 0 }, /"pollingCheck" must be a positive number of seconds; got 0/],
    [{ workers: 'many' }, /"workers" must be an integer >= 1; got "many"/],
    [{ concurrency: 2.5 }, /"concurrency" must be an integer >= 1; got 2.5/],
    [{ schema: 'Robert"); DROP' }, /"schema" must be a lower-case identifier/],
    [{ retryBackoff: -1 }, /"retryBackoff" must be a non-negative number of seconds; got -1/],
    [{ migrate: 'yes' }, /"migrate" must be a boolean; got "yes"/],
    [{ connection: 42 }, /"connection" must be a connection string or pg pool options/],
    [{ pollingInterval: 5 }, /"pollingInterval" is not an option/],
    [{ maxRetryDelay: 0 }, /"maxRetryDelay" must be a positive number of seconds; got 0/],
    [
      { taskTimeout: 3600 },
      /"staleJobTimeout" must exceed taskTimeout \(3600s\) \+ workerTimeoutGrace \(5s\) = 3605s, or a healthy job .* runs twice; got 3600/,
    ],
    [
      { taskTimeout: 100, workerTimeoutGrace: 30, staleJobTimeout: 120 },
      /"staleJobTimeout" must exceed taskTimeout \(100s\) \+ workerTimeoutGrace \(30s\) = 130s/,
    ],
  ])('%j', async (options, message) => {
    const attempt = boot(options as Partial<JobsModuleOptions>);
    await expect(attempt).rejects.toThrow(InvalidModuleOptionError);
    await expect(attempt).rejects.toThrow(message);
  });
});

@JobTask('twin')
@Injectable()
class FirstTwin {
  run() {}
}

@JobTask('twin')
@Injectable()
class SecondTwin {
  run() {}
}

@JobTask('runless')
@Injectable()
class Runless {}

function taskWith(options: Record<string, unknown>) {
  @JobTask(options as never)
  @Injectable()
  class BadlyConfigured {
    run() {}
  }
  return BadlyConfigured;
}

describe('a bad @JobTask() option fails the boot with a message naming the class, the option and the value', () => {
  it.each([
    [
      { name: 'a', timeout: -1 },
      /"timeout" on BadlyConfigured must be a positive number of seconds; got -1/,
    ],
    [
      { name: 'a', timeout: '30' },
      /"timeout" on BadlyConfigured must be a positive number of seconds; got "30"/,
    ],
    [
      { name: 'a', maxRetries: 1.5 },
      /"maxRetries" on BadlyConfigured must be an integer >= 0; got 1.5/,
    ],
    [
      { name: 'a', maxRetries: -1 },
      /"maxRetries" on BadlyConfigured must be an integer >= 0; got -1/,
    ],
    [
      { name: 'a b' },
      /"name" on BadlyConfigured must be 1-200 letters, digits or "_.:-"; got "a b"/,
    ],
    [{ name: 'a', retries: 3 }, /"retries" on BadlyConfigured is not an option; got 3/],
    [{ name: 'a', worker: 'yes' }, /"worker" on BadlyConfigured must be a boolean; got "yes"/],
    [
      { name: 'a', queue: 'e mails' },
      /"queue" on BadlyConfigured must be 1-200 letters, digits or "_.:-"; got "e mails"/,
    ],
    [
      { name: 'a', timezone: 'Europe/Berlin' },
      /"timezone" on BadlyConfigured only applies to a task with a "cron" schedule/,
    ],
    [
      { name: 'a', timeout: 3596 },
      /"timeout" on BadlyConfigured \+ workerTimeoutGrace \(5s\) = 3601s must stay below the JobsModule option staleJobTimeout \(3600s\), or a healthy job .* runs twice; got 3596/,
    ],
  ])('%j', async (options, message) => {
    const attempt = boot({}, [taskWith(options)]);
    await expect(attempt).rejects.toThrow(InvalidTaskHandlerError);
    await expect(attempt).rejects.toThrow(message);
  });

  it.each([
    [{ name: 'a', cron: '* * *' }, InvalidCronExpressionError],
    [{ name: 'a', cron: '0 * * * *', timezone: 'Mars/Olympus' }, InvalidTimeZoneError],
  ])('%j', async (options, ErrorClass) => {
    await expect(boot({}, [taskWith(options)])).rejects.toThrow(ErrorClass);
  });
});

it('fails the boot when two handlers claim one task name, naming both classes', async () => {
  await expect(boot({}, [FirstTwin, SecondTwin])).rejects.toThrow(InvalidTaskHandlerError);
  await expect(boot({}, [FirstTwin, SecondTwin])).rejects.toThrow(
    'Task "twin" has two handlers: FirstTwin and SecondTwin',
  );
});

it('fails the boot when a handler has no run method, naming the class', async () => {
  await expect(boot({}, [Runless])).rejects.toThrow(
    'Runless is decorated with @JobTask("runless") but has no run',
  );
});

it('refuses to boot on a schema that was never migrated when migrate is false', async () => {
  const attempt = boot({ schema: 'never_migrated', migrate: false });
  await expect(attempt).rejects.toThrow(SchemaNotMigratedError);
  await expect(attempt).rejects.toThrow(/"never_migrated" is at version 0/);
});

it('migrates a schema once when several instances boot at the same time', async () => {
  const apps = await Promise.all(
    [1, 2, 3].map(() => startJobsApp(db.url, { ...recording('x'), options: { schema: 'raced' } })),
  );
  try {
    const versions = await db.query(`SELECT version FROM raced.migrations ORDER BY version`);
    expect(versions.length).toBeGreaterThan(0);
    expect(new Set(versions.map((v) => v.version)).size).toBe(versions.length);
    const tables = await db.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'raced' ORDER BY 1`,
    );
    expect(tables.map((t) => t.table_name)).toEqual(
      expect.arrayContaining(['jobHistory', 'jobLock', 'jobSchedule', 'jobs', 'migrations']),
    );
  } finally {
    await Promise.all(apps.map((app) => app.close()));
  }
});

it('boots from forRootAsync with options built by an injected provider, and can be global', async () => {
  @Injectable()
  class Settings {
    readonly url = db.url;
  }
  @Module({ providers: [Settings], exports: [Settings] })
  class SettingsModule {}

  @Injectable()
  class Consumer {
    constructor(readonly queue: JobQueueService) {}
  }
  @Module({ providers: [Consumer] })
  class FeatureModule {}

  const module = await Test.createTestingModule({
    imports: [
      JobsModule.forRootAsync({
        isGlobal: true,
        imports: [SettingsModule],
        inject: [Settings],
        useFactory: (settings: Settings) => ({
          connection: settings.url,
          schema: 'async_boot',
          runJobs: false,
        }),
      }),
      FeatureModule,
    ],
  })
    .setLogger(false as never)
    .compile();
  await module.init();
  try {
    const { queue } = module.get(Consumer);
    await expect(queue.addJob({ task: 'anything' })).rejects.toThrow(UnknownTaskError);
    expect(await queue.getJob('00000000-0000-4000-8000-000000000000')).toBeNull();
    const rows = await db.query(`SELECT 1 FROM async_boot.migrations`);
    expect(rows.length).toBeGreaterThan(0);
  } finally {
    await module.close();
  }
});

it('closes its own connections on shutdown', async () => {
  const app = await startJobsApp(db.url, {
    ...recording('x'),
    options: { instanceId: 'closing-instance' },
  });
  const count = async () =>
    (
      await db.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE '%closing-instance%'`,
      )
    ).length;
  expect(await count()).toBeGreaterThan(0);
  await app.close();
  // A backend leaves pg_stat_activity a moment after its client hangs up.
  await waitFor('the backends to go', async () => (await count()) === 0, 5_000);
});
