import { JobControl, SIGNAL_CANCELLED, SIGNAL_NONE, nowMs } from './job-control.js';

/** The same slots, as each thread sees them: one buffer, two views. */
function pair(jobs = 2, slot = 1) {
  const buffer = JobControl.buffer(jobs);
  return { main: new JobControl(buffer, slot), thread: new JobControl(buffer, slot), buffer };
}

describe('JobControl', () => {
  it('lets the thread start a job the main thread has not taken back, and says when', () => {
    const { main, thread } = pair();
    const before = nowMs();
    expect(main.startedAt()).toBeUndefined();
    expect(thread.claimStart()).toBe(true);
    expect(main.startedAt()).toBeGreaterThanOrEqual(before);
    expect(main.startedAt()).toBeLessThanOrEqual(nowMs());
    expect(main.withdraw()).toBe(false);
  });

  it('lets the main thread take back a job not started, which the thread then skips', () => {
    const { main, thread } = pair();
    expect(main.withdraw()).toBe(true);
    expect(thread.claimStart()).toBe(false);
    expect(main.startedAt()).toBeUndefined();
    expect(main.withdraw()).toBe(false);
  });

  it('keeps the jobs of a batch apart', () => {
    const buffer = JobControl.buffer(2);
    const [first, second] = [new JobControl(buffer, 0), new JobControl(buffer, 1)];
    expect(first.withdraw()).toBe(true);
    expect(second.claimStart()).toBe(true);
    second.abort(SIGNAL_CANCELLED);
    expect(first.abortCode()).toBe(SIGNAL_NONE);
    expect(second.abortCode()).toBe(SIGNAL_CANCELLED);
  });

  it('wakes a thread waiting for an abort when one is asked for, with its reason', async () => {
    const { main, thread } = pair();
    const waiting = thread.whenSignalled();
    main.abort(SIGNAL_CANCELLED);
    await waiting;
    expect(thread.abortCode()).toBe(SIGNAL_CANCELLED);
  });

  it('releases that wait when the job ends with no abort, and takes no abort after', async () => {
    const { thread } = pair();
    const waiting = thread.whenSignalled();
    thread.ended();
    await waiting;
    expect(thread.abortCode()).toBe(SIGNAL_NONE);
  });

  it('tells the main thread a job ended, keeping when it started, even after an abort', () => {
    const { main, thread } = pair();
    thread.claimStart();
    const startedAt = main.startedAt();
    main.abort(SIGNAL_CANCELLED);
    expect(main.hasEnded()).toBe(false);
    thread.ended();
    expect(main.hasEnded()).toBe(true);
    expect(main.startedAt()).toBe(startedAt);
    expect(main.withdraw()).toBe(false);
  });
});
