import { InvalidModuleOptionError } from '../errors/jobs.errors.js';
import { MIGRATIONS } from '../schema/migrations.js';
import { jobsMigrations } from './jobs-migrations.js';

describe('jobsMigrations', () => {
  it('makes one TypeORM migration per library migration, in version order, named for TypeORM', () => {
    const classes = jobsMigrations('billing_jobs').map((Class) => new Class());
    expect(classes).toHaveLength(MIGRATIONS.length);
    const timestamps = classes.map((migration) => {
      const match = /^NestjsPgJobs_billing_jobs_v(\d+)_(\d{13})$/.exec(migration.name ?? '');
      expect(match).not.toBeNull();
      return Number(match![2]);
    });
    expect(classes.map((m) => Number(/_v(\d+)_/.exec(m.name!)![1]))).toEqual(
      MIGRATIONS.map((m) => m.version),
    );
    expect([...timestamps].sort((a, b) => a - b)).toEqual(timestamps);
    expect(new Set(timestamps).size).toBe(timestamps.length);
  });

  it('runs exactly the non-transactional migrations outside a transaction', () => {
    const transaction = jobsMigrations().map((Class) => new Class().transaction);
    expect(transaction).toEqual(
      MIGRATIONS.map((m) => (m.transactional === false ? false : undefined)),
    );
    expect(transaction).toContain(false);
  });

  it('names each schema apart, so that two schemas migrate side by side', () => {
    const names = (schema: string) => jobsMigrations(schema).map((Class) => new Class().name);
    expect(names('a_jobs').filter((name) => names('b_jobs').includes(name))).toEqual([]);
  });

  it('refuses a schema name the module would refuse', () => {
    expect(() => jobsMigrations('Bad-Name')).toThrow(InvalidModuleOptionError);
  });
});
