import type { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { toSchemaName } from '../../libs/jobs/src/database/schema-name.js';
import type { TaskRegistry } from '../../libs/jobs/src/discovery/task-registry.js';
import type { ResolvedQueueOptions } from '../../libs/jobs/src/options/resolve-queues.js';
import type { ResolvedJobsOptions } from '../../libs/jobs/src/options/resolved-options.js';
import type { QueueStateService } from '../../libs/jobs/src/queue-state/queue-state.service.js';
import { QueueClaims } from '../../libs/jobs/src/runner/queue-claims.js';
import { runnerSql } from '../../libs/jobs/src/runner/runner.sql.js';
import type { ClaimRow } from '../../libs/jobs/src/runner/claim.sql.js';

/**
 * How one round of claims shares the instance's free capacity among its sets of tasks (the
 * unlimited queues together, each limited queue alone), without a database: the claim statements
 * are answered from a count of due jobs per task, in the order the statements ask.
 */

const schema = toSchemaName('jobs');
const sql = runnerSql(schema);

/** Task `<queue>Task` in each queue; `plain` is a queue without limits. */
const taskOf = (queue: string) => `${queue}Task`;

/** An instance with a task in `plain` and in each queue of `limits`, 100 jobs due for each. */
function setup(limits: Record<string, Partial<ResolvedQueueOptions>> = {}, queues = ['plain']) {
  queues = [...queues, ...Object.keys(limits)];
  const due = new Map<string, number>(queues.map((queue) => [taskOf(queue), 100]));
  /** The tasks of each statement, in the order they were sent. */
  const statements: string[][] = [];
  const paused = new Set<string>();
  const listeners: (() => void)[] = [];
  let next = 0;
  const db = {
    schema,
    query: async (statement: unknown, values: unknown[]) => {
      const [asked, , tasks] = values as [number, string, string[]];
      statements.push(tasks);
      const rows: ClaimRow[] = [];
      for (const task of tasks) {
        while (rows.length < asked && due.get(task)! > 0) {
          due.set(task, due.get(task)! - 1);
          rows.push({ id: `job-${next++}`, task, queue: task.replace(/Task$/, '') } as ClaimRow);
        }
      }
      if (statement === sql.claim) return rows;
      // A limited queue's claim: a row of what it found of the limits, even when it claimed nothing.
      const meta = { cut: false, heldBack: false, rateFreesIn: null };
      return rows.length > 0 ? rows.map((row) => ({ ...row, ...meta })) : [{ id: null, ...meta }];
    },
  };
  const registry = {
    names: queues.map(taskOf).sort(),
    queueOf: (task: string) => task.replace(/Task$/, ''),
  };
  const queueState = {
    onChange: (listener: () => void) => listeners.push(listener),
    isPaused: (queue: string) => paused.has(queue),
  };
  const options = {
    instanceId: 'unit',
    queues: new Map(
      Object.entries(limits).map(([name, queue]) => [name, { name, paused: false, ...queue }]),
    ),
  };
  const claims = new QueueClaims(
    options as unknown as ResolvedJobsOptions,
    db as unknown as JobsDatabase,
    sql,
    registry as unknown as TaskRegistry,
    queueState as unknown as QueueStateService,
  );
  /** One round of `free` slots: the tasks of the jobs it claimed, in claim order, and its verdict. */
  async function round(free: number) {
    const claimed: string[] = [];
    const verdict = await claims.claim(free, (rows) => claimed.push(...rows.map((r) => r.task)));
    return { claimed, ...verdict };
  }
  const pause = (queue: string) => {
    paused.add(queue);
    for (const listener of listeners) listener();
  };
  return { claims, due, statements, round, pause };
}

it('claims every queue without limits in one statement, the claim made without queues', async () => {
  const { due, statements, round } = setup({}, ['plain', 'alpha', 'beta']);
  for (const task of due.keys()) due.set(task, 1);
  expect(await round(3)).toEqual({
    claimed: ['alphaTask', 'betaTask', 'plainTask'],
    full: true,
    heldBack: false,
    rateWakeMs: undefined,
  });
  expect(statements).toEqual([['alphaTask', 'betaTask', 'plainTask']]);
});

it('starts each round with the next set, so that no queue keeps the freed slots to itself', async () => {
  const { round } = setup({ alpha: { concurrency: 10 }, beta: { globalConcurrency: 10 } });
  const firsts: string[] = [];
  for (let i = 0; i < 6; i++) firsts.push(...(await round(1)).claimed);
  expect(firsts).toEqual([
    'plainTask',
    'alphaTask',
    'betaTask',
    'plainTask',
    'alphaTask',
    'betaTask',
  ]);
});

it('gives what one set leaves of the free capacity to the next sets of the round', async () => {
  const { due, round } = setup({ alpha: { concurrency: 10 }, beta: { globalConcurrency: 10 } });
  due.set('plainTask', 1);
  due.set('alphaTask', 2);
  expect(await round(5)).toMatchObject({
    claimed: ['plainTask', 'alphaTask', 'alphaTask', 'betaTask', 'betaTask'],
    full: true,
  });
  // Nothing left to take: a round that comes back short says there is no backlog.
  due.set('betaTask', 0);
  expect(await round(5)).toMatchObject({ claimed: [], full: false, heldBack: false });
});

it('holds a queue back at its own concurrency here, and claims it again once one of its jobs settles', async () => {
  const { claims, round } = setup({ alpha: { concurrency: 2 } });
  // Round 1 starts with the unlimited set; round 2 with alpha.
  expect((await round(1)).claimed).toEqual(['plainTask']);
  expect(await round(4)).toMatchObject({
    claimed: ['alphaTask', 'alphaTask', 'plainTask', 'plainTask'],
    full: true,
  });
  claims.started('alpha');
  claims.started('alpha');
  // Round 3 starts with plain again, round 4 with alpha: at its cap, alpha is passed over.
  expect(await round(1)).toMatchObject({ claimed: ['plainTask'] });
  expect(await round(3)).toMatchObject({
    claimed: ['plainTask', 'plainTask', 'plainTask'],
    heldBack: true,
  });
  claims.settled('alpha');
  expect((await round(2)).claimed).toEqual(['plainTask', 'plainTask']);
  expect((await round(2)).claimed).toEqual(['alphaTask', 'plainTask']);
});

it("leaves a paused queue's tasks out of every statement from the next round on", async () => {
  const { statements, round, pause } = setup({ alpha: { concurrency: 10 } });
  await round(1);
  pause('alpha');
  statements.length = 0;
  await round(5);
  await round(5);
  expect(statements.flat()).not.toContain('alphaTask');
  expect(statements.flat()).toContain('plainTask');
});
