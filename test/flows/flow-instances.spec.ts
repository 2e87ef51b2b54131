import type { FlowStepResult } from '../fixtures/instance/fixture.module.js';
import { fastLiveness, useCluster } from '../support/cluster.js';
import type { JobsApp } from '../support/jobs-app.js';

const FAN_OUT = 50;
// Each fan-out job takes 100 ms on instances of concurrency 4: no one instance can run all fifty
// before the others, woken by the same notification, claim theirs.
const cluster = useCluster({ options: fastLiveness(3, 0.5, 4) });
let enqueuer: JobsApp;

beforeAll(async () => {
  await cluster.startProcesses(['flow-a', 'flow-b', 'flow-c']);
  enqueuer = await cluster.startEnqueuer('flow-enqueuer');
}, 90_000);

it('runs a 1 → 50 → 1 flow across three instances, each job once, its sink summing all 50 results', async () => {
  const items = Array.from({ length: FAN_OUT }, (_, i) => `item-${i}`);
  const flow = await enqueuer.queue.addFlow({
    name: 'three instances',
    jobs: [
      { ref: 'split', task: 'flowStep', payload: { value: 1 } },
      ...items.map((ref, i) => ({
        ref,
        task: 'flowStep',
        payload: { value: 1000 * (i + 1), ms: 100 },
        dependsOn: ['split'],
      })),
      { ref: 'sum', task: 'flowStep', dependsOn: items },
    ],
  });

  const sum = (await enqueuer.queue.waitForJob(flow.jobs.sum, { timeout: 60 })) as FlowStepResult;
  // Each item passes on its own value plus split's 1; the sink adds the fifty up.
  const expected = items.reduce((total, _, i) => total + 1000 * (i + 1) + 1, 0);
  expect(sum.value).toBe(expected);
  expect(sum.dependencies).toEqual(Object.fromEntries(items.map((ref) => [ref, 'completed'])));

  const ids = Object.values(flow.jobs);
  const runs = await cluster.runs(ids);
  const runsPerJob = new Map<string, number>();
  for (const run of runs) runsPerJob.set(run.jobId, (runsPerJob.get(run.jobId) ?? 0) + 1);
  expect(runsPerJob.size).toBe(FAN_OUT + 2);
  expect([...runsPerJob.values()].every((n) => n === 1)).toBe(true);
  expect(new Set(runs.map((run) => run.instance))).toEqual(new Set(['flow-a', 'flow-b', 'flow-c']));

  // In dependency order: split first, the sink after every item.
  const startOf = new Map(runs.map((run) => [run.jobId, run.at.getTime()]));
  const itemStarts = items.map((ref) => startOf.get(flow.jobs[ref])!);
  expect(Math.min(...itemStarts)).toBeGreaterThanOrEqual(startOf.get(flow.jobs.split)!);
  expect(startOf.get(flow.jobs.sum)!).toBeGreaterThanOrEqual(Math.max(...itemStarts));
  expect(await cluster.states(ids)).toEqual({ completed: FAN_OUT + 2 });
}, 120_000);
