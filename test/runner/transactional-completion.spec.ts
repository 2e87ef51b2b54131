import { jest } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import pg from 'pg';
import { JobFailedError, JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { fastLiveness, useCluster } from '../support/cluster.js';
import { quietLogger, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';

const cluster = useCluster({ options: fastLiveness(3, 0.5, 4) });
const { db } = cluster;

/** Tasks waiting for the test to let them go on, by job id. */
const gates = new Map<string, () => void>();
const gate = (id: string) => new Promise<void>((resolve) => gates.set(id, resolve));
const openGate = (id: string) =>
  waitFor(`job ${id} to wait at its gate`, () => gates.get(id))!.then((open) => open());

type Then = 'return' | 'throw' | 'gate' | 'snooze' | 'break';

/** Writes a ledger row through `ctx.manager`, then does what its payload says. */
@JobTask({ name: 'ledger', transactional: true })
@Injectable()
class LedgerTask implements JobTaskHandler<{ then: Then }, string> {
  async run(
    { then }: { then: Then },
    ctx: JobContext,
  ): Promise<string | ReturnType<JobContext['snooze']>> {
    const [{ count }] = await ctx.manager!.query(
      'SELECT count(*)::int AS count FROM ledger WHERE job_id = $1',
      [ctx.id],
    );
    await ctx.manager!.query('INSERT INTO ledger (job_id, entry) VALUES ($1, $2)', [
      ctx.id,
      `${then} ${count + 1}`,
    ]);
    switch (then) {
      case 'throw':
        throw new Error('the ledger does not balance');
      case 'gate':
        await gate(ctx.id);
        break;
      case 'snooze':
        if (count === 0) return ctx.snooze(0.1);
        break;
      case 'break':
        // The task swallows an error: its transaction is aborted, and cannot commit anything.
        await ctx.manager!.query('SELECT 1 / 0').catch(() => undefined);
        break;
    }
    return `booked ${count + 1}`;
  }
}

/** What `StubbornTask` met when it wrote again after its attempt had timed out. */
const lateWrites = new Map<string, string>();

/** Writes, then ignores its signal until the test opens its gate, then writes again. */
@JobTask({ name: 'stubborn', transactional: true, timeout: 1 })
@Injectable()
class StubbornTask implements JobTaskHandler {
  async run(_payload: unknown, ctx: JobContext): Promise<void> {
    await ctx.manager!.query(`INSERT INTO ledger (job_id, entry) VALUES ($1, 'before')`, [ctx.id]);
    await gate(ctx.id);
    try {
      await ctx.manager!.query(`INSERT INTO ledger (job_id, entry) VALUES ($1, 'after')`, [ctx.id]);
      lateWrites.set(ctx.id, 'written');
    } catch (err) {
      lateWrites.set(ctx.id, (err as Error).message);
    }
  }
}

/** Reports progress twice, at once, and writes its row: its progress write waits for the pool. */
@JobTask({ name: 'progressive', transactional: true })
@Injectable()
class ProgressiveTask implements JobTaskHandler {
  async run(_payload: unknown, ctx: JobContext): Promise<void> {
    ctx.reportProgress(10);
    ctx.reportProgress(20);
    await ctx.manager!.query(`INSERT INTO ledger (job_id, entry) VALUES ($1, 'progressive')`, [
      ctx.id,
    ]);
  }
}

@JobTask('plain')
@Injectable()
class PlainTask implements JobTaskHandler<unknown, boolean> {
  run(_payload: unknown, ctx: JobContext): boolean {
    return ctx.manager === undefined;
  }
}

let app: JobsApp;

beforeAll(async () => {
  await db.query(`CREATE TABLE ledger (job_id uuid NOT NULL, entry text NOT NULL)`);
  await db.query(`CREATE TABLE tx_effects (job_id uuid NOT NULL, attempt int NOT NULL)`);
  app = await cluster.startApp('tx-app', {
    tasks: [LedgerTask, StubbornTask, PlainTask],
    options: { maxRetries: 0, pollingCheck: 0.1 },
  });
});

const ledger = async (id: string) =>
  (
    await db.query<{ entry: string }>(`SELECT entry FROM ledger WHERE job_id = $1 ORDER BY entry`, [
      id,
    ])
  ).map((row) => row.entry);

it("commits the task's writes with the job's completion", async () => {
  const { id, promise } = await app.queue.addJob<string>({
    task: 'ledger',
    payload: { then: 'return' },
    promise: true,
  });
  await expect(promise).resolves.toBe('booked 1');
  expect(await ledger(id)).toEqual(['return 1']);
  expect(await db.historyOf(id)).toMatchObject({ state: 'completed' });
});

it('leaves no write of a task that throws: its transaction rolls back, the failure is recorded', async () => {
  const { id, promise } = await app.queue.addJob({
    task: 'ledger',
    payload: { then: 'throw' },
    promise: true,
  });
  await expect(promise).rejects.toThrow('the ledger does not balance');
  expect(await ledger(id)).toEqual([]);
  expect(await db.historyOf(id)).toMatchObject({ state: 'failed' });
});

it('commits the writes of each run with the snooze that ends it', async () => {
  const { id, promise } = await app.queue.addJob<string>({
    task: 'ledger',
    payload: { then: 'snooze' },
    promise: true,
  });
  await expect(promise).resolves.toBe('booked 2');
  expect(await ledger(id)).toEqual(['snooze 1', 'snooze 2']);
});

it('fails the attempt, writing nothing, when the task broke its own transaction', async () => {
  const { id, promise } = await app.queue.addJob({
    task: 'ledger',
    payload: { then: 'break' },
    promise: true,
  });
  await expect(promise).rejects.toThrow(JobFailedError);
  expect(await ledger(id)).toEqual([]);
  expect((await db.historyOf(id))?.lastErrorMessage).toMatch(
    /^The transaction of the task could not commit with the end of its attempt: .*current transaction is aborted/,
  );
});

it('rolls the writes back when the attempt was taken away before it ended (the completion is fenced)', async () => {
  const warn = jest.spyOn(quietLogger, 'warn');
  try {
    const { id } = await app.queue.addJob({ task: 'ledger', payload: { then: 'gate' } });
    await waitFor('the task to wait', () => gates.has(id));
    // As a reaper would: the attempt is no longer the job's active one.
    await db.query(`UPDATE jobs."jobHistory" SET state = 'interrupted' WHERE id = $1`, [id]);
    await openGate(id);
    await waitFor('the fenced completion to be dropped', () =>
      warn.mock.calls.some(([message]) => String(message).includes(`Job ${id} (ledger) completed`)),
    );
    expect(await ledger(id)).toEqual([]);
    expect(await db.historyOf(id)).toMatchObject({ state: 'interrupted' });
  } finally {
    warn.mockRestore();
  }
});

it('ends the transaction of a task that outlives its timeout: its writes roll back, later ones fail', async () => {
  const { id, promise } = await app.queue.addJob({ task: 'stubborn', promise: true });
  await expect(promise).rejects.toThrow('did not finish within its timeout of 1s');
  expect(await ledger(id)).toEqual([]);
  await openGate(id);
  await waitFor('the late write', () => lateWrites.get(id));
  expect(lateWrites.get(id)).not.toBe('written');
  expect(await ledger(id)).toEqual([]);
});

it('ends transactional attempts that report progress while they hold every connection of the pool', async () => {
  const small = await cluster.startApp('tx-small-pool', {
    tasks: [ProgressiveTask],
    options: {
      connection: { connectionString: db.url, max: 2 },
      concurrency: 2,
      progressInterval: 60,
      pollingCheck: 0.1,
    },
  });
  const added = await small.queue.addJobs([
    { task: 'progressive', promise: true },
    { task: 'progressive', promise: true },
  ]);
  await Promise.all(added.map((job) => job.promise));
  for (const { id } of added) {
    expect(await ledger(id)).toEqual(['progressive']);
    expect((await small.queue.getJob(id))?.progress).toBe(20);
  }
  await small.close();
});

it('gives other tasks no ctx.manager', async () => {
  const { promise } = await app.queue.addJob<boolean>({ task: 'plain', promise: true });
  await expect(promise).resolves.toBe(true);
});

it("lets no crash make the task's writes and the job's end disagree", async () => {
  const [midTask, midEnding] = [101, 102];
  const gates = new pg.Client({ connectionString: db.url });
  await gates.connect();
  try {
    await gates.query('SELECT pg_advisory_lock($1), pg_advisory_lock($2)', [midTask, midEnding]);
    const victim = await cluster.startProcess('tx-victim');
    const enqueuer = await cluster.startEnqueuer('tx-enqueuer');
    const [first, second] = await enqueuer.queue.addJobs([
      { task: 'txRecord', payload: { gate: midTask } },
      { task: 'txRecord', payload: { gate: midEnding } },
    ]);
    const ids = [first.id, second.id];
    await waitFor('both tasks to have written', async () => (await cluster.runs(ids)).length === 2);

    // The second job's completion, once sent, waits on this lock inside the task's transaction.
    const rowLock = new pg.Client({ connectionString: db.url });
    await rowLock.connect();
    await rowLock.query('BEGIN');
    await rowLock.query(`SELECT 1 FROM jobs."jobHistory" WHERE id = $1 FOR UPDATE`, [second.id]);
    await gates.query('SELECT pg_advisory_unlock($1)', [midEnding]);
    await waitFor('the completion to wait for the row, in the transaction', async () => {
      const [row] = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE application_name LIKE 'nestjs-pg-jobs tx-victim%' AND wait_event_type = 'Lock'
           AND state = 'active' AND query LIKE '%''completed''%'`,
      );
      return row.n === 1;
    });

    victim.signal('SIGKILL');
    await victim.exited;
    await rowLock.query('ROLLBACK');
    await rowLock.end();
    await waitFor(
      'the killed instance to have no session left',
      async () => (await cluster.backendCount('tx-victim')) === 0,
    );
    const effects = () =>
      db.query<{ job_id: string; attempt: number }>(
        `SELECT job_id, attempt FROM tx_effects WHERE job_id = ANY($1) ORDER BY job_id`,
        [ids],
      );
    // Killed mid-task and mid-ending: neither write nor completion.
    expect(await effects()).toEqual([]);
    expect(await cluster.states(ids)).toEqual({ active: 2 });

    await gates.query('SELECT pg_advisory_unlock($1)', [midTask]);
    await cluster.startProcess('tx-survivor');
    await waitFor(
      'the survivor to reap and complete both',
      async () => (await cluster.states(ids)).completed === 2,
      30_000,
    );
    expect(await effects()).toEqual(ids.sort().map((id) => ({ job_id: id, attempt: 2 })));
  } finally {
    await gates.end();
  }
}, 60_000);
