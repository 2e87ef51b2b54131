import type { JobsApp } from '../support/jobs-app.js';
import { waitFor } from '../support/jobs-app.js';
import { fastLiveness, useCluster } from '../support/cluster.js';
import type { InstanceProcess } from '../fixtures/instance/instance-process.js';

const JOBS = 2_000;
// Short, but not so short that a live instance's heartbeat, late on two cores shared with the
// whole test suite, gets it presumed dead: its jobs would then run twice without a kill.
const INSTANCE_TIMEOUT = 3;
const REAPER_INTERVAL = 0.5;
/**
 * Generous for the work itself (three instances of concurrency 8 on two shared cores), plus one
 * rescue per kill. What it must not be is anywhere near staleJobTimeout (the default, an hour),
 * which is all the seed's reaper had to go on.
 */
const DEADLINE_MS = 90_000 + 2 * (INSTANCE_TIMEOUT + REAPER_INTERVAL) * 1000;

const cluster = useCluster({ options: fastLiveness(INSTANCE_TIMEOUT, REAPER_INTERVAL, 8) });
let enqueuer: JobsApp;

beforeAll(async () => {
  enqueuer = await cluster.startEnqueuer('chaos-enqueuer');
}, 30_000);

const completed = async () => (await cluster.states()).completed ?? 0;

/**
 * SIGKILLs the live instance running the most jobs and returns the jobs it was running when it
 * died, read once the server has closed all its sessions and before a reaper could have acted
 * (instanceTimeout after its last heartbeat).
 */
async function killBusiest(
  live: InstanceProcess[],
): Promise<{ victim: InstanceProcess; active: string[] }> {
  const counts = await Promise.all(
    live.map(async (instance) => (await cluster.activeJobsOf(instance.id)).length),
  );
  const victim = live[counts.indexOf(Math.max(...counts))];
  await cluster.kill(victim);
  return { victim, active: await cluster.activeJobsOf(victim.id) };
}

it('completes every job despite two instances killed mid-run, re-running only what they held', async () => {
  const startedAt = Date.now();
  const instances = await cluster.startProcesses(['chaos-a', 'chaos-b', 'chaos-c']);
  const ids: string[] = [];
  for (let offset = 0; offset < JOBS; offset += 500) {
    const batch = Array.from({ length: Math.min(500, JOBS - offset) }, () => ({
      task: 'record',
      payload: { ms: 5 + Math.floor(Math.random() * 46) },
    }));
    ids.push(...(await enqueuer.queue.addJobs(batch)).map((job) => job.id));
  }

  await waitFor(
    'a third of the jobs to complete',
    async () => (await completed()) >= JOBS / 3,
    DEADLINE_MS,
  );
  const first = await killBusiest(instances);
  await waitFor(
    'two thirds of the jobs to complete',
    async () => (await completed()) >= (2 * JOBS) / 3,
    DEADLINE_MS,
  );
  const second = await killBusiest(instances.filter((instance) => instance !== first.victim));

  await waitFor(
    'every job to complete',
    async () => (await completed()) === JOBS,
    DEADLINE_MS,
    200,
  );
  const elapsedMs = Date.now() - startedAt;

  // The kills hit instances with work in hand, or they prove nothing.
  expect(first.active.length).toBeGreaterThan(0);
  expect(second.active.length).toBeGreaterThan(0);

  expect(await cluster.states()).toEqual({ completed: JOBS });
  expect(await cluster.db.query('SELECT id FROM jobs.jobs')).toEqual([]);

  const runsPerJob = new Map<string, number>();
  for (const run of await cluster.runs()) {
    runsPerJob.set(run.jobId, (runsPerJob.get(run.jobId) ?? 0) + 1);
  }
  expect(new Set(runsPerJob.keys())).toEqual(new Set(ids));
  const ranTwice = [...runsPerJob].filter(([, n]) => n > 1).map(([id]) => id);
  const heldByTheDead = new Set([...first.active, ...second.active]);
  expect(ranTwice.filter((id) => !heldByTheDead.has(id))).toEqual([]);

  expect(elapsedMs).toBeLessThan(DEADLINE_MS);
}, 240_000);
