import { completeFlowJobs } from '../support/flow-completion.js';
import { startJobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const DEPENDENTS = 9_998;

/**
 * How many times a walk of the queue in claim order moves to another heap page than the row before
 * it: the pages a run of claims dirties, each claim deleting its rows one page after another.
 */
async function pageChangesInClaimOrder() {
  const [row] = await db.query<{ due: number; changes: number; pages: number }>(
    `SELECT count(*)::int AS due,
            count(*) FILTER (WHERE page IS DISTINCT FROM previous)::int AS changes,
            count(DISTINCT page)::int AS pages
     FROM (SELECT page, lag(page) OVER (ORDER BY priority DESC, "waitUntil", seq) AS previous
           FROM (SELECT (ctid::text::point)[0] AS page, priority, "waitUntil", seq
                 FROM jobs.jobs WHERE "waitUntil" <= now()) q) w`,
  );
  return row;
}

it('writes the dependents its completion releases in claim order, so that the claims after it read and dirty each page once', async () => {
  const app = await startJobsApp(db.url, { options: { runJobs: false, allowUnknownTasks: true } });
  const items = Array.from({ length: DEPENDENTS }, (_, n) => `item-${n}`);
  const flow = await app.queue.addFlow({
    jobs: [
      { ref: 'source', task: 'x' },
      ...items.map((ref) => ({ ref, task: 'x', dependsOn: ['source'] })),
    ],
  });
  await app.close();
  // Statistics, as autovacuum gathers them on a live database: the planner's choices for the
  // release (and the order it writes in) follow them.
  await db.query('ANALYZE jobs.jobs, jobs."jobDependency"');
  expect(await completeFlowJobs(db, [flow.jobs.source])).toEqual([
    { id: flow.jobs.source, told: '0', woke: '1' },
  ]);
  const { due, changes, pages } = await pageChangesInClaimOrder();
  // Every dependent released, each page entered once: a release in any other order (by ids random
  // within a millisecond, by a hash) puts the rows fifty claims take together on as many pages.
  expect(pages).toBeGreaterThan(10);
  expect({ due, changes }).toEqual({ due: DEPENDENTS, changes: pages });
}, 60_000);
