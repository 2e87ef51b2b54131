import { JobControl } from './job-control.js';
import { ThreadBatchRunner } from './thread-batch-runner.js';
import type { WorkerJobAnswer, WorkerJobRequest } from './worker-protocol.js';

const done = { ending: { outcome: 'completed', result: null } } as const;

/** A thread's runner whose jobs end when the test says, each job's task named in its payload. */
function setup() {
  /** What happened, in order: `start <key>` and `sent <key>`. */
  const log: string[] = [];
  const sent: number[] = [];
  const started: number[] = [];
  const controls = new Map<number, JobControl>();
  const running = new Map<number, () => void>();
  let key = 0;
  const runner = new ThreadBatchRunner(
    (job, control) =>
      new Promise<WorkerJobAnswer>((resolve) => {
        started.push(job.key);
        log.push(`start ${job.key}`);
        controls.set(job.key, control);
        const end = () => resolve({ key: job.key, outcome: done });
        if ((job.payload as { instant?: boolean }).instant) end();
        else running.set(job.key, end);
      }),
    (answer) => {
      sent.push(answer.key);
      // The main thread must not read a job as ended before its answer is on its way.
      const ended = controls.get(answer.key)!.hasEnded();
      log.push(ended ? `sent ${answer.key} after it was marked ended` : `sent ${answer.key}`);
    },
  );
  const batch = (tasks: readonly (string | { task: string; instant: true })[]) => {
    const control = JobControl.buffer(tasks.length);
    const jobs = tasks.map((spec, slot): WorkerJobRequest => ({
      key: ++key,
      slot,
      task: typeof spec === 'string' ? spec : spec.task,
      payload: typeof spec === 'string' ? {} : spec,
      id: `job-${key}`,
      attempt: 1,
      maxRetries: 0,
      claim: '1',
      timeout: 60,
    }));
    const settled = runner.run({ jobs, control });
    return { jobs, settled, control: (slot: number) => new JobControl(control, slot) };
  };
  const end = (jobKey: number) => running.get(jobKey)!();
  return { runner, batch, log, sent, started, end };
}

/** Lets the runner's turn end: answers flushed at the end of a turn are out after this. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('ThreadBatchRunner', () => {
  it('starts the jobs of a batch one at a time, in order, and settles the batch once all ended', async () => {
    const { batch, started, end } = setup();
    const { jobs, settled } = batch(['a', 'a', 'a']);
    let batchSettled = false;
    void settled.then(() => (batchSettled = true));
    await nextTurn();
    expect(started).toEqual([jobs[0].key]);
    end(jobs[0].key);
    await nextTurn();
    expect(started).toEqual([jobs[0].key, jobs[1].key]);
    end(jobs[1].key);
    await nextTurn();
    end(jobs[2].key);
    await settled;
    expect(batchSettled).toBe(true);
  });

  it('skips the jobs the main thread took back before they started', async () => {
    const { batch, started, end, sent } = setup();
    const { jobs, settled, control } = batch(['a', 'a', 'a']);
    expect(control(1).withdraw()).toBe(true);
    await nextTurn();
    end(jobs[0].key);
    await nextTurn();
    end(jobs[2].key);
    await settled;
    expect(started).toEqual([jobs[0].key, jobs[2].key]);
    expect(sent).toEqual([jobs[0].key, jobs[2].key]);
  });

  it('sends each answer before it starts the next job, then marks the job ended', async () => {
    const { batch, log, end } = setup();
    const { jobs, settled, control } = batch([
      { task: 'short', instant: true },
      { task: 'short', instant: true },
      'long',
    ]);
    await nextTurn();
    // The long job may hold the thread's CPU: the answers before it are out already.
    expect(log).toEqual([
      `start ${jobs[0].key}`,
      `sent ${jobs[0].key}`,
      `start ${jobs[1].key}`,
      `sent ${jobs[1].key}`,
      `start ${jobs[2].key}`,
    ]);
    expect([0, 1, 2].map((slot) => control(slot).hasEnded())).toEqual([true, true, false]);
    end(jobs[2].key);
    await settled;
    expect(control(2).hasEnded()).toBe(true);
  });
});
