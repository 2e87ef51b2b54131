import { InvalidJobsOptionError } from '../errors/jobs.errors.js';
import * as defaults from './defaults.js';
import { resolveJobsOptions } from './resolve-options.js';

describe('resolveJobsOptions', () => {
  it("applies the seed's defaults", () => {
    const resolved = resolveJobsOptions({ connection: 'postgres://x' });
    expect(resolved).toMatchObject({
      connection: { connectionString: 'postgres://x' },
      schema: { name: defaults.DEFAULT_SCHEMA, quoted: `"${defaults.DEFAULT_SCHEMA}"` },
      migrate: true,
      pollingCheck: 5,
      scheduledCheck: 300,
      maxRetries: 5,
      retryBackoff: 60,
      taskTimeout: 300,
      staleJobTimeout: 3600,
      runJobs: true,
      allowUnknownTasks: false,
    });
    expect(resolved.workers).toBeGreaterThanOrEqual(1);
    expect(resolved.concurrency).toBe(resolved.workers);
  });

  it('takes concurrency from workers unless given', () => {
    expect(resolveJobsOptions({ connection: 'x', workers: 3 }).concurrency).toBe(3);
    expect(resolveJobsOptions({ connection: 'x', workers: 3, concurrency: 10 }).concurrency).toBe(
      10,
    );
  });

  it('refuses both a connection and a dataSource', () => {
    expect(() =>
      resolveJobsOptions({
        connection: 'x',
        dataSource: { options: { type: 'postgres' } } as never,
      }),
    ).toThrow('"dataSource" cannot be combined with "connection"');
  });

  it('refuses a DataSource of another database type', () => {
    expect(() =>
      resolveJobsOptions({ dataSource: { options: { type: 'mysql' } } as never }),
    ).toThrow(InvalidJobsOptionError);
  });

  it.each(['pg_catalog', 'Jobs', 'a-b', '', 'x'.repeat(41)])(
    'refuses the schema name %p',
    (schema) => {
      expect(() => resolveJobsOptions({ connection: 'x', schema })).toThrow(
        '"schema" must be a lower-case identifier',
      );
    },
  );
});
