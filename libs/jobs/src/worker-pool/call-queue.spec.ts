import { jest } from '@jest/globals';
import { CallQueue } from './call-queue.js';

const call = (seq: number) => ({ seq });

/** A queue whose safety net serves with `serve`. */
function setup(recheckMs = 60_000, serve: () => number = () => 0) {
  const missed: number[] = [];
  const queue = new CallQueue<{ seq: number }>(recheckMs, serve, (sent) => missed.push(sent));
  return { queue, missed };
}

describe('CallQueue', () => {
  it('hands calls out in arrival order', () => {
    const { queue } = setup();
    for (const seq of [1, 2, 3, 4]) queue.push(call(seq));
    expect(queue.take(3).map((c) => c.seq)).toEqual([1, 2, 3]);
    expect(queue.take(3).map((c) => c.seq)).toEqual([4]);
    expect(queue.size).toBe(0);
  });

  it('puts calls taken back from a thread back in their places, before later arrivals', () => {
    const { queue } = setup();
    queue.push(call(5));
    queue.push(call(6));
    queue.requeue([call(4), call(2)]);
    expect(queue.take(4).map((c) => c.seq)).toEqual([2, 4, 5, 6]);
  });

  it('takes a call out wherever it waits, once', () => {
    const { queue } = setup();
    const second = call(2);
    for (const c of [call(1), second, call(3)]) queue.push(c);
    expect(queue.remove(second)).toBe(true);
    expect(queue.remove(second)).toBe(false);
    expect(queue.take(3).map((c) => c.seq)).toEqual([1, 3]);
  });

  describe('its safety net', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('serves what a missed wake-up left waiting, reports it, and disarms once nothing waits', () => {
      let serves = 0;
      const { queue, missed } = setup(1000, () => {
        serves++;
        return queue.take(1).length;
      });
      queue.push(call(1));
      queue.push(call(2));
      jest.advanceTimersByTime(1000);
      expect(missed).toEqual([1]);
      jest.advanceTimersByTime(1000);
      expect(missed).toEqual([1, 1]);
      expect(jest.getTimerCount()).toBe(0);
      jest.advanceTimersByTime(10_000);
      expect(serves).toBe(2);
    });

    it('arms no timer while nothing waits', () => {
      const { queue } = setup();
      queue.push(call(1));
      queue.take(1);
      expect(jest.getTimerCount()).toBe(0);
    });
  });
});
