import pg from 'pg';
import { DatabaseUnreachableError } from 'nestjs-pg-jobs';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { TcpProxy } from '../fixtures/instance/tcp-proxy.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const INSTANCE_ID = 'unreachable-enqueuer';
let proxy: TcpProxy;
let app: JobsApp;

// The app reaches the database through a proxy that the first test takes down: a refused
// connection, without touching the server.
beforeAll(async () => {
  const target = new URL(db.url);
  proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
  await proxy.up();
  app = await startJobsApp(proxy.rewrite(db.url), {
    options: { instanceId: INSTANCE_ID, runJobs: false, allowUnknownTasks: true },
  });
});
afterAll(async () => {
  await proxy.up().catch(() => undefined);
  await app?.close();
  await proxy.down();
});

async function pendingKeys(): Promise<string[]> {
  const rows = await db.query<{ uniqueKey: string }>(
    `SELECT "uniqueKey" FROM jobs.jobs WHERE "uniqueKey" IS NOT NULL ORDER BY 1`,
  );
  return rows.map((row) => row.uniqueKey);
}

/**
 * Runs `enqueue` while a session of the test holds a lock that the insert waits for, then ends the
 * enqueuer's waiting statement with `act` (`pg_terminate_backend`, `pg_cancel_backend`): the
 * statement has been sent, and it is ended in the middle, as a connection lost mid-statement is.
 */
async function endWhileWaiting<T>(enqueue: () => Promise<T>, act: string): Promise<unknown> {
  const locker = new pg.Client({ connectionString: db.url });
  locker.on('error', () => undefined);
  await locker.connect();
  try {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE jobs.jobs IN EXCLUSIVE MODE');
    const outcome = enqueue().then(
      () => 'resolved',
      (err: unknown) => err,
    );
    const [{ pid }] = await waitFor('the insert to wait for the lock', async () => {
      const rows = await db.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock'`,
        [`nestjs-pg-jobs ${INSTANCE_ID}`],
      );
      return rows.length === 1 && rows;
    });
    await db.query(`SELECT ${act}($1)`, [pid]);
    return await outcome;
  } finally {
    await locker.query('ROLLBACK').catch(() => undefined);
    await locker.end();
  }
}

it('throws DatabaseUnreachableError when the connection is lost mid-statement: it may have written, a uniqueKey makes the retry safe', async () => {
  const lost = await endWhileWaiting(
    () => app.queue.addJob({ task: 'unreachable.t', uniqueKey: 'order-1' }),
    'pg_terminate_backend',
  );
  expect(lost).toBeInstanceOf(DatabaseUnreachableError);
  expect(lost).toMatchObject({
    mayHaveWritten: true,
    message: expect.stringMatching(
      /^The database is unreachable while enqueueing a job: .*may have committed.*A retry is safe with a uniqueKey/,
    ),
  });
  const cause = (lost as Error).cause as { code?: string; message: string };
  expect(cause).not.toBeInstanceOf(DatabaseUnreachableError);
  expect(cause.code === '57P01' || /^Connection terminated/.test(cause.message)).toBe(true);

  // Here the server rolled it back; the retry with its key adds it once either way.
  const retried = await app.queue.addJob({ task: 'unreachable.t', uniqueKey: 'order-1' });
  const again = await app.queue.addJob({ task: 'unreachable.t', uniqueKey: 'order-1' });
  expect(again).toEqual({ id: retried.id, deduplicated: true });
  expect(await pendingKeys()).toEqual(['order-1']);
});

it('leaves any other database error unchanged (a cancelled statement)', async () => {
  const cancelled = await endWhileWaiting(
    () => app.queue.addJobs([{ task: 'unreachable.t' }, { task: 'unreachable.t' }]),
    'pg_cancel_backend',
  );
  expect(cancelled).not.toBeInstanceOf(DatabaseUnreachableError);
  expect(cancelled).toMatchObject({ code: '57014' });
});

it('throws DatabaseUnreachableError when the connection is refused: nothing was written', async () => {
  await proxy.down();
  // The pool's idle connections were cut: once it has dropped them, every query connects anew.
  const { pool } = app.module.get(JobsDatabase);
  await waitFor('the pool to drop its cut connections', () => pool.totalCount === 0);

  for (const enqueue of [
    () => app.queue.addJob({ task: 'unreachable.t', uniqueKey: 'order-2' }),
    () => app.queue.addJobs([{ task: 'unreachable.t' }, { task: 'unreachable.t' }]),
  ]) {
    const refused = await enqueue().then(
      () => 'resolved',
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(DatabaseUnreachableError);
    expect(refused).toMatchObject({
      mayHaveWritten: false,
      cause: expect.objectContaining({ code: 'ECONNREFUSED' }),
      message: expect.stringMatching(
        /^The database is unreachable while enqueueing (a job|2 jobs): .*ECONNREFUSED.*Nothing was written: call it again once the database is back\.$/,
      ),
    });
  }

  await proxy.up();
  const { id } = await app.queue.addJob({ task: 'unreachable.t', uniqueKey: 'order-2' });
  expect(await app.queue.getJob(id)).toMatchObject({ state: 'pending' });
  expect(await pendingKeys()).toEqual(['order-1', 'order-2']);
});
