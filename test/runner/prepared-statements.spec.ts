import { DataSource } from 'typeorm';
import { InvalidModuleOptionError } from 'nestjs-pg-jobs';
import { startJobsApp } from '../support/jobs-app.js';
import { recording } from '../support/recorder.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

/**
 * Runs one job through an app whose only pooled connection is `dataSource`'s single one, and
 * returns the module's prepared statements on that connection (they are per session).
 */
async function preparedAfterOneJob(preparedStatements?: boolean): Promise<string[]> {
  const dataSource = await new DataSource({
    type: 'postgres',
    url: db.url,
    extra: { max: 1 },
  }).initialize();
  const app = await startJobsApp(db.url, {
    ...recording('prepared'),
    options: { connection: undefined, dataSource, preparedStatements },
  });
  try {
    const { id, promise } = await app.queue.addJob({ task: 'record', promise: true });
    await promise;
    expect((await app.queue.getJob(id))?.state).toBe('completed');
    const rows: { name: string }[] = await dataSource.query(
      `SELECT name FROM pg_prepared_statements WHERE name LIKE 'nestjs\\_pg\\_jobs\\_%'`,
    );
    return rows.map((row) => row.name);
  } finally {
    await app.close();
    await dataSource.destroy();
  }
}

it('runs the hot path as prepared statements: enqueue, claim, completion and look-up', async () => {
  expect(await preparedAfterOneJob()).toHaveLength(4);
});

it('prepares nothing with preparedStatements: false, for poolers that cannot keep them', async () => {
  expect(await preparedAfterOneJob(false)).toEqual([]);
});

it('refuses a preparedStatements that is not a boolean, naming it', async () => {
  const boot = startJobsApp(db.url, { options: { preparedStatements: 'yes' as never } });
  await expect(boot).rejects.toThrow(InvalidModuleOptionError);
  await expect(boot).rejects.toThrow('preparedStatements');
});
