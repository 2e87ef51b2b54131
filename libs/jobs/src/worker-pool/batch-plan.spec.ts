import { pickSteal, planBatches } from './batch-plan.js';

const idle = { ready: true, busy: false };
const busy = { ready: true, busy: true };
const booting = { ready: false, busy: false };

describe('planBatches', () => {
  it('sends everything waiting to the one idle thread, in one batch', () => {
    expect(planBatches([idle], 10, 1)).toEqual([10]);
  });

  it('shares the waiting calls evenly between the idle threads, earlier batches taking the odd ones', () => {
    expect(planBatches([idle, busy, idle, idle], 10, 4)).toEqual([4, 3, 3]);
  });

  it('sends no more batches than there are calls', () => {
    expect(planBatches([idle, idle, idle], 2, 3)).toEqual([1, 1]);
  });

  it('keeps a share for the thread the pool adds once every thread is busy', () => {
    expect(planBatches([idle, busy], 5, 3)).toEqual([3, 2]);
    expect(planBatches([busy, busy], 1, 3)).toEqual([1]);
  });

  it('adds no thread while the pool is full, or while one of its threads still boots', () => {
    expect(planBatches([busy, busy], 4, 2)).toEqual([]);
    expect(planBatches([busy, booting], 4, 3)).toEqual([]);
    expect(planBatches([idle, booting], 4, 3)).toEqual([4]);
  });

  it('sends nothing when nothing waits', () => {
    expect(planBatches([idle], 0, 1)).toEqual([]);
  });
});

describe('pickSteal', () => {
  const call = (seq: number, thread: number) => ({ seq, thread });

  it('takes half, rounded up, of the unstarted calls of the thread holding the oldest one, oldest first', () => {
    const calls = [call(7, 2), call(4, 1), call(9, 1), call(5, 1), call(3, 2), call(6, 1)];
    // Thread 2 holds the oldest (3): of its two, it gives up half, the older.
    expect(pickSteal(calls)).toEqual([call(3, 2)]);
    expect(pickSteal(calls.filter((c) => c.thread === 1))).toEqual([call(4, 1), call(5, 1)]);
  });

  it('takes nothing when every call has started', () => {
    expect(pickSteal([])).toEqual([]);
  });
});
