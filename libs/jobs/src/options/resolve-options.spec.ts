import { InvalidModuleOptionError } from '../errors/jobs.errors.js';
import * as defaults from './defaults.js';
import { resolveJobsOptions } from './resolve-options.js';

describe('resolveJobsOptions', () => {
  it("applies the seed's defaults", () => {
    const resolved = resolveJobsOptions({ connection: 'postgres://x' });
    expect(resolved).toMatchObject({
      connection: { connectionString: 'postgres://x' },
      schema: { name: defaults.DEFAULT_SCHEMA, quoted: `"${defaults.DEFAULT_SCHEMA}"` },
      migrate: true,
      preparedStatements: true,
      pollingCheck: 5,
      scheduledCheck: 300,
      maxRetries: 5,
      retryBackoff: 60,
      taskTimeout: 300,
      staleJobTimeout: 3600,
      runJobs: true,
      allowUnknownTasks: false,
      historyExpiration: 90000,
      historyPruneBatchSize: 1000,
      errorSearchIndex: true,
    });
    expect(resolved.workers).toBeGreaterThanOrEqual(1);
    expect(resolved.concurrency).toBe(Math.max(10, resolved.workers));
  });

  it('runs 10 jobs at once unless given, or more when there are more worker threads', () => {
    expect(resolveJobsOptions({ connection: 'x', workers: 3 }).concurrency).toBe(10);
    expect(resolveJobsOptions({ connection: 'x', workers: 16 }).concurrency).toBe(16);
    expect(resolveJobsOptions({ connection: 'x', workers: 3, concurrency: 2 }).concurrency).toBe(2);
  });

  it('refuses both a connection and a dataSource', () => {
    expect(() =>
      resolveJobsOptions({
        connection: 'x',
        dataSource: { options: { type: 'postgres' } } as never,
      }),
    ).toThrow('"dataSource" cannot be combined with "connection"');
  });

  it('asks for a connection when given neither a connection nor a dataSource', () => {
    expect(() => resolveJobsOptions({})).toThrow(
      'JobsModule option "connection" must be a connection string or pg pool options (or pass "dataSource"); got undefined.',
    );
  });

  it('refuses a DataSource of another database type', () => {
    expect(() =>
      resolveJobsOptions({ dataSource: { options: { type: 'mysql' } } as never }),
    ).toThrow(InvalidModuleOptionError);
  });

  it.each(['pg_catalog', 'Jobs', 'a-b', '', 'x'.repeat(41)])(
    'refuses the schema name %p',
    (schema) => {
      expect(() => resolveJobsOptions({ connection: 'x', schema })).toThrow(
        '"schema" must be a lower-case identifier',
      );
    },
  );

  it('defaults the liveness options: a heartbeat every 5 s, presumed dead after 30 s', () => {
    expect(resolveJobsOptions({ connection: 'x' })).toMatchObject({
      heartbeatInterval: defaults.DEFAULT_HEARTBEAT_INTERVAL,
      instanceTimeout: defaults.DEFAULT_INSTANCE_TIMEOUT,
    });
    expect([defaults.DEFAULT_HEARTBEAT_INTERVAL, defaults.DEFAULT_INSTANCE_TIMEOUT]).toEqual([
      5, 30,
    ]);
  });

  it('refuses an instanceTimeout shorter than two heartbeats', () => {
    expect(() =>
      resolveJobsOptions({ connection: 'x', heartbeatInterval: 2, instanceTimeout: 3 }),
    ).toThrow(
      new InvalidModuleOptionError(
        'instanceTimeout',
        3,
        'must be at least twice heartbeatInterval (2s), so that one late heartbeat does not get a live instance presumed dead',
      ),
    );
    expect(
      resolveJobsOptions({ connection: 'x', heartbeatInterval: 0.25, instanceTimeout: 0.5 }),
    ).toMatchObject({ heartbeatInterval: 0.25, instanceTimeout: 0.5 });
  });

  it.each([0, -1, Number.NaN, '5'])('refuses heartbeatInterval %p', (value) => {
    expect(() =>
      resolveJobsOptions({ connection: 'x', heartbeatInterval: value as never }),
    ).toThrow('JobsModule option "heartbeatInterval" must be a positive number of seconds');
  });
});

describe('history retention options', () => {
  it('accepts 0 as "keep history forever"', () => {
    expect(resolveJobsOptions({ connection: 'x', historyExpiration: 0 }).historyExpiration).toBe(0);
  });

  it.each([
    [
      { historyExpiration: -1 },
      '"historyExpiration" must be a non-negative number of seconds; got -1',
    ],
    [
      { historyExpiration: '1d' },
      '"historyExpiration" must be a non-negative number of seconds; got "1d"',
    ],
    [{ historyPruneBatchSize: 0 }, '"historyPruneBatchSize" must be an integer >= 1; got 0'],
    [{ historyPruneBatchSize: 1.5 }, '"historyPruneBatchSize" must be an integer >= 1; got 1.5'],
  ])('refuses %j', (options, message) => {
    expect(() => resolveJobsOptions({ connection: 'x', ...(options as object) })).toThrow(message);
  });
});

describe('missedSlotGrace', () => {
  it('defaults to 60 s, and is the grace of every schedule that sets none of its own', () => {
    expect(defaults.DEFAULT_MISSED_SLOT_GRACE).toBe(60);
    const resolved = resolveJobsOptions({
      connection: 'x',
      missedSlotGrace: 8,
      schedules: [
        { task: 'a', cron: '* * * * *' },
        { task: 'b', cron: '* * * * *', missedSlotGrace: 2 },
      ],
    });
    expect(resolved.missedSlotGrace).toBe(8);
    expect(resolved.schedules.map((schedule) => schedule.missedSlotGrace)).toEqual([8, 2]);
    expect(resolveJobsOptions({ connection: 'x' }).missedSlotGrace).toBe(60);
  });

  it('defaults to twice pollingCheck when that is longer, and refuses a grace no longer than pollingCheck', () => {
    expect(resolveJobsOptions({ connection: 'x', pollingCheck: 45 }).missedSlotGrace).toBe(90);
    expect(() =>
      resolveJobsOptions({ connection: 'x', pollingCheck: 10, missedSlotGrace: 10 }),
    ).toThrow(
      new InvalidModuleOptionError(
        'missedSlotGrace',
        10,
        'must be longer than pollingCheck (10s): a cron job that falls due just after a poll waits for the next one, and would be skipped as missed',
      ),
    );
  });

  it.each([0, -1, Number.NaN, '60'])('refuses missedSlotGrace %p, naming it', (value) => {
    expect(() => resolveJobsOptions({ connection: 'x', missedSlotGrace: value as never })).toThrow(
      'JobsModule option "missedSlotGrace" must be a positive number of seconds',
    );
  });
});

describe('queues', () => {
  it('resolves each queue by name, with no limit where none is given', () => {
    const { queues } = resolveJobsOptions({
      connection: 'x',
      queues: {
        emails: {
          concurrency: 2,
          globalConcurrency: 5,
          rateLimit: { limit: 100, periodSeconds: 60 },
        },
        imports: { paused: true },
      },
    });
    expect([...queues.values()]).toEqual([
      {
        name: 'emails',
        concurrency: 2,
        globalConcurrency: 5,
        rateLimit: { limit: 100, periodSeconds: 60 },
        groupConcurrency: undefined,
        paused: false,
      },
      {
        name: 'imports',
        concurrency: undefined,
        globalConcurrency: undefined,
        rateLimit: undefined,
        groupConcurrency: undefined,
        paused: true,
      },
    ]);
    expect(resolveJobsOptions({ connection: 'x' }).queues.size).toBe(0);
  });

  it.each([
    [[], '"queues" must be an object of queue options by queue name; got []'],
    [{ 'a b': {} }, '"queues.a b" must be named with 1-200 letters, digits or "_.:-"'],
    [{ emails: 5 }, '"queues.emails" must be an object; got 5'],
    [{ emails: { limit: 5 } }, '"queues.emails.limit" is not an option; got 5'],
    [
      { emails: { globalConcurrency: 0 } },
      '"queues.emails.globalConcurrency" must be an integer >= 1; got 0',
    ],
    [
      { emails: { groupConcurrency: 1.5 } },
      '"queues.emails.groupConcurrency" must be an integer >= 1; got 1.5',
    ],
    [
      { emails: { rateLimit: { limit: 10 } } },
      '"queues.emails.rateLimit.periodSeconds" must be a positive number of seconds; got undefined',
    ],
    [
      { emails: { rateLimit: { limit: 0, periodSeconds: 1 } } },
      '"queues.emails.rateLimit.limit" must be an integer >= 1; got 0',
    ],
    [
      { emails: { rateLimit: { limit: 1, periodSeconds: 1, burst: 2 } } },
      '"queues.emails.rateLimit.burst" is not an option; got 2',
    ],
    [{ emails: { paused: 'yes' } }, '"queues.emails.paused" must be a boolean; got "yes"'],
  ])('refuses %j, naming the option by its path', (queues, message) => {
    expect(() => resolveJobsOptions({ connection: 'x', queues: queues as never })).toThrow(message);
  });
});

describe('workerModule', () => {
  it('takes the .ts source of a workerModule whose .js file is missing (an app run from its sources)', () => {
    const source = new URL(
      '../../../../test/fixtures/workers/worker-tasks.module.ts',
      import.meta.url,
    );
    const named = source.href.replace(/\.ts$/, '.js');
    expect(
      resolveJobsOptions({ connection: 'postgres://x', workerModule: named }).workerModule,
    ).toEqual({
      url: source.href,
    });
  });
});
