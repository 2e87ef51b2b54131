import { waitFor } from './support/jobs-app.js';
import type { JobsApp } from './support/jobs-app.js';
import { useTestDatabase } from './support/test-database.js';
import { fastLiveness, startEnqueuer, useCleanup } from './fixtures/instance/liveness.js';
import { activeJobsOf, backendCount, createExecutionsTable } from './fixtures/instance/database.js';
import { startInstanceProcess } from './fixtures/instance/instance-process.js';
import type { InstanceProcess } from './fixtures/instance/instance-process.js';

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
const liveness = fastLiveness(INSTANCE_TIMEOUT, REAPER_INTERVAL, 8);
let instances: InstanceProcess[] = [];
let enqueuer: JobsApp;

const track = useCleanup();
const db = useTestDatabase();

beforeAll(async () => {
  await createExecutionsTable(db);
  enqueuer = track(await startEnqueuer(db.url, 'chaos-enqueuer'));
}, 30_000);

async function completedCount(): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs."jobHistory" WHERE state = 'completed'`,
  );
  return row.n;
}

/**
 * SIGKILLs the live instance running the most jobs and returns the jobs it was running when it
 * died, read once the server has closed all its sessions (so no statement it sent is still
 * running) and before a reaper could have acted (instanceTimeout after its last heartbeat).
 */
async function killBusiest(
  live: InstanceProcess[],
): Promise<{ victim: InstanceProcess; active: string[] }> {
  const counts = await Promise.all(
    live.map(async (instance) => (await activeJobsOf(db, instance.id)).length),
  );
  const victim = live[counts.indexOf(Math.max(...counts))];
  victim.signal('SIGKILL');
  await victim.exited;
  await waitFor(
    'the killed instance’s sessions to end',
    async () => (await backendCount(db, victim.id)) === 0,
  );
  return { victim, active: await activeJobsOf(db, victim.id) };
}

it('completes every job despite two instances killed mid-run, re-running only what they held', async () => {
  const startedAt = Date.now();
  instances = await Promise.all(
    ['chaos-a', 'chaos-b', 'chaos-c'].map((instanceId) =>
      startInstanceProcess(db.url, { ...liveness, instanceId }).then(track),
    ),
  );
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
    async () => (await completedCount()) >= JOBS / 3,
    DEADLINE_MS,
  );
  const first = await killBusiest(instances);
  await waitFor(
    'two thirds of the jobs to complete',
    async () => (await completedCount()) >= (2 * JOBS) / 3,
    DEADLINE_MS,
  );
  const second = await killBusiest(instances.filter((instance) => instance !== first.victim));

  await waitFor(
    'every job to complete',
    async () => (await completedCount()) === JOBS,
    DEADLINE_MS,
    200,
  );
  const elapsedMs = Date.now() - startedAt;

  // The kills hit instances with work in hand, or they prove nothing.
  expect(first.active.length).toBeGreaterThan(0);
  expect(second.active.length).toBeGreaterThan(0);

  const history = await db.query<{ state: string; n: number }>(
    `SELECT state, count(*)::int AS n FROM jobs."jobHistory" GROUP BY state`,
  );
  expect(history).toEqual([{ state: 'completed', n: JOBS }]);
  expect(await db.query('SELECT id FROM jobs.jobs')).toEqual([]);

  const runs = await db.query<{ job_id: string; n: number }>(
    'SELECT job_id, count(*)::int AS n FROM executions GROUP BY job_id',
  );
  expect(new Set(runs.map((run) => run.job_id))).toEqual(new Set(ids));
  const ranTwice = runs.filter((run) => run.n > 1).map((run) => run.job_id);
  const heldByTheDead = new Set([...first.active, ...second.active]);
  expect(ranTwice.filter((id) => !heldByTheDead.has(id))).toEqual([]);

  expect(elapsedMs).toBeLessThan(DEADLINE_MS);
}, 240_000);
