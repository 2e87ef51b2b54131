import { Injectable } from '@nestjs/common';
import type { Type } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { useCluster } from '../support/cluster.js';
import { waitFor } from '../support/jobs-app.js';

// A poll every 30 s: what reaches the other instances within a second is the notification.
const cluster = useCluster({ options: { concurrency: 2, pollingCheck: 30 } });

@JobTask({ name: 'importWork', queue: 'imports' })
@Injectable()
class ImportWork implements JobTaskHandler {
  async run(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
}

/** A task only `instance` runs, in the default queue: proof that that instance claimed. */
function probeOf(instance: string): Type {
  @JobTask(`probe-${instance}`)
  @Injectable()
  class Probe implements JobTaskHandler {
    run(): void {}
  }
  return Probe;
}

const dbNow = async () =>
  (await cluster.db.query<{ now: Date }>('SELECT clock_timestamp() AS now'))[0].now;
const importStates = async () =>
  Object.fromEntries(
    (
      await cluster.db.query<{ state: string; n: number }>(
        `SELECT 'pending' AS state, count(*)::int AS n FROM jobs.jobs WHERE task = 'importWork'
         UNION ALL
         SELECT state, count(*)::int FROM jobs."jobHistory" h WHERE task = 'importWork'
           AND NOT EXISTS (SELECT 1 FROM jobs.jobs j WHERE j.id = h.id) GROUP BY state`,
      )
    ).map((row) => [row.state, row.n]),
  ) as Record<string, number | undefined>;
const startsOf = (ids?: readonly string[]) =>
  cluster.db.query<{ startedAt: Date }>(
    `SELECT "startedAt" FROM jobs."jobHistory"
     WHERE task = 'importWork' AND "startedAt" IS NOT NULL AND ($1::uuid[] IS NULL OR id = ANY($1))
     ORDER BY "startedAt"`,
    [ids ?? null],
  );

it('pauses a queue on every instance within a second, keeps taking jobs for it, and runs them after a resume', async () => {
  const [a, b, c] = await cluster.startApps(['a', 'b', 'c'], (id) => ({
    tasks: [ImportWork, probeOf(id)],
  }));
  const enqueuer = await cluster.startEnqueuer('enqueuer');
  await enqueuer.queue.addJobs(Array.from({ length: 300 }, () => ({ task: 'importWork' })));
  await waitFor('a dozen imports to start', async () => (await startsOf()).length >= 12);

  await a.queue.pauseQueue('imports');
  const pausedAt = await dbNow();
  // Enqueueing still works, and the other instances are woken by it: they must leave these alone.
  const addedWhilePaused = await enqueuer.queue.addJobs(
    Array.from({ length: 20 }, () => ({ task: 'importWork' })),
  );
  // Each probe, queued behind the imports, is claimed by its own instance: each of the three has
  // claimed since the pause, and passed over every due import to get to it.
  const probes = await enqueuer.queue.addJobs(
    ['a', 'b', 'c'].map((id) => ({ task: `probe-${id}` })),
  );
  await waitFor(
    'the three probes to complete',
    async () => (await cluster.states(probes.map((job) => job.id))).completed === 3,
  );
  // Running jobs finish; nothing new starts.
  await waitFor('the running imports to finish', async () => !(await importStates()).active);

  const lastStart = (await startsOf()).at(-1)!.startedAt;
  expect(lastStart.getTime()).toBeLessThanOrEqual(pausedAt.getTime() + 1000);
  const paused = await importStates();
  expect(paused.interrupted).toBeUndefined();
  expect(paused.pending).toBeGreaterThanOrEqual(20 + 1);
  expect(await startsOf(addedWhilePaused.map((job) => job.id))).toEqual([]);
  const [imports] = (await c.queue.getQueues()).filter((queue) => queue.name === 'imports');
  expect(imports).toMatchObject({ paused: true, pending: paused.pending, active: 0 });

  await b.queue.resumeQueue('imports');
  const resumedAt = await dbNow();
  await waitFor(
    'every import to complete',
    async () => (await importStates()).completed === 320,
    30_000,
  );
  const afterResume = await startsOf(addedWhilePaused.map((job) => job.id));
  expect(afterResume).toHaveLength(20);
  for (const { startedAt } of afterResume) {
    expect(startedAt.getTime()).toBeGreaterThanOrEqual(resumedAt.getTime() - 50);
  }
  const firstAfterResume = (await startsOf()).find((row) => row.startedAt > pausedAt)!.startedAt;
  expect(firstAfterResume.getTime()).toBeLessThanOrEqual(resumedAt.getTime() + 1000);
  expect((await a.queue.getQueues()).find((queue) => queue.name === 'imports')).toMatchObject({
    paused: false,
    pending: 0,
  });
});
