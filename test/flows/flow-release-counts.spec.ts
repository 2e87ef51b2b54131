import { completeFlowJobs } from '../support/flow-completion.js';
import { startJobsApp } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let app: JobsApp;

beforeAll(async () => {
  app = await startJobsApp(db.url, { options: { runJobs: false, allowUnknownTasks: true } });
});

/**
 * A flow a, b → both (after a and b), onlyA (after a), and its jobs' ids by ref: the batches that
 * complete a and b count each dependent's dependencies one way when they hold one flow job, another
 * when they hold more (`completeInFlow`).
 */
async function twoSourceFlow() {
  const { jobs } = await app.queue.addFlow({
    jobs: [
      { ref: 'a', task: 'x' },
      { ref: 'b', task: 'x' },
      { ref: 'both', task: 'x', dependsOn: ['a', 'b'] },
      { ref: 'onlyA', task: 'x', dependsOn: ['a'] },
    ],
  });
  return jobs;
}

/**
 * What is left of each job's dependencies, and whether it is due, by ref; null once it left the
 * queue.
 */
async function queued(jobs: Record<string, string>) {
  const rows = await db.query<{ id: string; blockedBy: number | null; due: boolean }>(
    `SELECT id, "blockedBy", "waitUntil" <= now() AS due FROM jobs.jobs WHERE id = ANY($1::uuid[])`,
    [Object.values(jobs)],
  );
  return Object.fromEntries(
    Object.entries(jobs).map(([ref, id]) => {
      const row = rows.find((r) => r.id === id);
      return [ref, row ? { blockedBy: row.blockedBy, due: row.due } : null];
    }),
  );
}

it('takes one dependency off each dependent of the one flow job a batch completes', async () => {
  const jobs = await twoSourceFlow();
  expect(await completeFlowJobs(db, [jobs.a])).toEqual([{ id: jobs.a, told: '0', woke: '1' }]);
  expect(await queued(jobs)).toEqual({
    a: null,
    b: { blockedBy: null, due: true },
    both: { blockedBy: 1, due: false },
    onlyA: { blockedBy: 0, due: true },
  });
  expect(await completeFlowJobs(db, [jobs.b])).toEqual([{ id: jobs.b, told: '0', woke: '1' }]);
  expect((await queued(jobs)).both).toEqual({ blockedBy: 0, due: true });
});

it('counts as many dependencies off a dependent as the batch completed of its own', async () => {
  const jobs = await twoSourceFlow();
  const rows = await completeFlowJobs(db, [jobs.a, jobs.b]);
  expect(rows.map((r) => r.id).sort()).toEqual([jobs.a, jobs.b].sort());
  expect(rows.every((r) => r.woke === '1')).toBe(true);
  expect(await queued(jobs)).toEqual({
    a: null,
    b: null,
    both: { blockedBy: 0, due: true },
    onlyA: { blockedBy: 0, due: true },
  });
});

it('releases nothing twice when the same completion is written again', async () => {
  const jobs = await twoSourceFlow();
  await completeFlowJobs(db, [jobs.a]);
  // The attempt is no longer active: the repeat is fenced out, and counts nothing.
  expect(await completeFlowJobs(db, [jobs.a])).toEqual([]);
  expect((await queued(jobs)).both).toEqual({ blockedBy: 1, due: false });
});
