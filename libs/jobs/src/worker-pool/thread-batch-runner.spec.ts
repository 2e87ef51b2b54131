import { JobControl } from './job-control.js';
import { SHORT_TASK_MS, ThreadBatchRunner } from './thread-batch-runner.js';
import type { WorkerJobAnswer, WorkerJobRequest } from './worker-protocol.js';

const done = { ending: { outcome: 'completed', result: null } } as const;

/** A thread's runner whose jobs end when the test says, each job's task named in its payload. */
function setup() {
  const sent: number[][] = [];
  const started: number[] = [];
  const running = new Map<number, () => void>();
  let key = 0;
  const runner = new ThreadBatchRunner(
    (job) =>
      new Promise<WorkerJobAnswer>((resolve) => {
        started.push(job.key);
        const end = () => resolve({ key: job.key, outcome: done });
        if ((job.payload as { instant?: boolean }).instant) end();
        else running.set(job.key, end);
      }),
    (answers) => sent.push(answers.map((answer) => answer.key)),
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
      timeout: 60,
    }));
    const settled = runner.run({ jobs, control });
    return { jobs, settled, control: (slot: number) => new JobControl(control, slot) };
  };
  const end = (jobKey: number) => running.get(jobKey)!();
  return { runner, batch, sent, started, end };
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
    expect(sent.flat()).toEqual([jobs[0].key, jobs[2].key]);
  });

  it('sends the answers of short jobs that end in one turn together', async () => {
    const { batch, sent } = setup();
    // The first job of a task is not known to be short: the answers before it go out first.
    await batch([{ task: 'short', instant: true }]).settled;
    sent.length = 0;
    const { jobs, settled } = batch(
      Array.from({ length: 5 }, () => ({ task: 'short', instant: true as const })),
    );
    await settled;
    expect(sent).toEqual([jobs.map((job) => job.key)]);
  });

  it('sends the answers waiting before it starts a job whose task is not known to be short', async () => {
    const { batch, sent, started, end } = setup();
    await batch([{ task: 'short', instant: true }]).settled;
    sent.length = 0;
    const { jobs } = batch([{ task: 'short', instant: true }, 'long']);
    await nextTurn();
    // The long job runs, and the short one's answer is already out: it neither waits for the long
    // one nor is lost if the thread dies under it.
    expect(started.at(-1)).toBe(jobs[1].key);
    expect(sent).toEqual([[jobs[0].key]]);
    end(jobs[1].key);
  });

  it('judges a task by its last run: after a long one, the answers before it go out first', async () => {
    const { batch, sent, end } = setup();
    await batch([{ task: 'z', instant: true }]).settled;
    await batch([{ task: 'x', instant: true }]).settled;
    const slow = batch(['x']);
    await nextTurn();
    await new Promise((resolve) => setTimeout(resolve, SHORT_TASK_MS * 5));
    end(slow.jobs[0].key);
    await slow.settled;
    sent.length = 0;
    const { jobs, settled } = batch([
      { task: 'z', instant: true },
      { task: 'x', instant: true },
    ]);
    await settled;
    expect(sent).toEqual([[jobs[0].key], [jobs[1].key]]);
  });
});
