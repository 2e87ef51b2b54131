import { toSchemaName } from '../database/schema-name.js';
import { childIndexName, historyPartitionsSql } from './history-partitions.sql.js';

describe('childIndexName (a history index on one partition)', () => {
  it('is the parent index name with the partition suffix, in lower case', () => {
    expect(childIndexName('job_history_unique_key', 'jobHistory_default')).toBe(
      'job_history_unique_key_default',
    );
    expect(childIndexName('job_history_unique_key', 'jobHistory_20261205T110000')).toBe(
      'job_history_unique_key_20261205t110000',
    );
  });

  it('stays within the 63 bytes of a PostgreSQL name, keeping the whole suffix', () => {
    const name = childIndexName('x'.repeat(63), 'jobHistory_20261205T110000');
    expect(name).toHaveLength(63);
    expect(name.endsWith('_20261205t110000')).toBe(true);
  });
});

describe('the statements that complete an index on a partition', () => {
  const sql = historyPartitionsSql(toSchemaName('jobs'));

  it('name only the library’s own indexes and partitions', () => {
    expect(sql.attachIndex('job_history_unique_key', 'job_history_unique_key_default')).toBe(
      'ALTER INDEX "jobs"."job_history_unique_key" ATTACH PARTITION "jobs"."job_history_unique_key_default"',
    );
    expect(() => sql.attachIndex('x"; DROP TABLE jobs; --', 'y')).toThrow(/not an index/);
    expect(() =>
      sql.buildPartitionIndex('job_history_x', 'jobs', 'USING btree (id)', true),
    ).toThrow(/not a partition/);
  });
});
