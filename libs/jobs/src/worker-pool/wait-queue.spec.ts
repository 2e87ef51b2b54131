import { WaitQueue } from './wait-queue.js';

/** A queue over `threads` free threads, each call taking one until the test frees it. */
function setup(threads = 0, recheckMs = 60_000) {
  const state = { threads, sent: [] as string[], missed: 0 };
  const queue = new WaitQueue(
    () => state.threads > 0,
    recheckMs,
    (sent) => (state.missed += sent),
  );
  const call = (name: string, signal?: AbortSignal) => {
    const key = {};
    const sent = queue.enqueue(
      key,
      () => {
        state.threads--;
        state.sent.push(name);
        return name;
      },
      signal,
    );
    return { key, sent };
  };
  const free = (count = 1) => {
    state.threads += count;
    queue.serve();
  };
  return { state, queue, call, free };
}

describe('WaitQueue', () => {
  it('sends at once while a thread is free', async () => {
    const { state, call } = setup(1);
    await expect(call('a').sent).resolves.toBe('a');
    expect(state.threads).toBe(0);
  });

  it('sends waiting calls in arrival order, one per freed thread', () => {
    const { state, call, free } = setup();
    for (const name of ['a', 'b', 'c', 'd']) void call(name).sent;
    free();
    expect(state.sent).toEqual(['a']);
    free(2);
    expect(state.sent).toEqual(['a', 'b', 'c']);
    free();
  });

  it('queues an arrival behind the waiting calls even when a thread is free as it arrives', () => {
    const { state, call, free } = setup();
    void call('waiting').sent;
    // A thread frees without the queue hearing of it yet; the arrival's own check finds it.
    state.threads = 1;
    void call('arrival').sent;
    expect(state.sent).toEqual(['waiting']);
    free();
    expect(state.sent).toEqual(['waiting', 'arrival']);
  });

  it('takes an aborted call out of the queue, rejected with its reason, and never sends it', async () => {
    const { state, call, free } = setup();
    const controller = new AbortController();
    const aborted = call('aborted', controller.signal);
    void call('next').sent;
    controller.abort(new Error('shut down'));
    await expect(aborted.sent).rejects.toThrow('shut down');
    free();
    expect(state.sent).toEqual(['next']);
  });

  it('rejects a call whose signal aborted before it queued', async () => {
    const { state, call } = setup(1);
    await expect(call('late', AbortSignal.abort(new Error('gone'))).sent).rejects.toThrow('gone');
    expect(state.sent).toEqual([]);
  });

  it('withdraws one call and rejects every call on stop', async () => {
    const { state, queue, call, free } = setup();
    const first = call('first');
    const second = call('second');
    const third = call('third');
    queue.withdraw(second.key, () => new Error('settled elsewhere'));
    await expect(second.sent).rejects.toThrow('settled elsewhere');
    queue.rejectAll(() => new Error('stopped'));
    await expect(first.sent).rejects.toThrow('stopped');
    await expect(third.sent).rejects.toThrow('stopped');
    free();
    expect(state.sent).toEqual([]);
  });

  it('sends, and reports, what a missed wake-up left waiting at the next safety re-check', async () => {
    const { state, call } = setup(0, 20);
    const waiting = call('waiting');
    state.threads = 1;
    await expect(waiting.sent).resolves.toBe('waiting');
    expect(state.missed).toBe(1);
  });
});
