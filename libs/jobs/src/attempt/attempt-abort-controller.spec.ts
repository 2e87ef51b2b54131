import { AttemptAbortController } from './attempt-abort-controller.js';

describe('AttemptAbortController', () => {
  it('aborts a signal asked for before the abort, with its reason', () => {
    const controller = new AttemptAbortController();
    const { signal } = controller;
    const reason = new Error('timeout');
    controller.abort(reason);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
  });

  it('hands out an already aborted signal when asked for only after the abort', () => {
    const controller = new AttemptAbortController();
    const reason = new Error('shutdown');
    controller.abort(reason);
    expect(controller.signal.aborted).toBe(true);
    expect(controller.signal.reason).toBe(reason);
  });

  it('keeps the first reason and tells each listener once', () => {
    const controller = new AttemptAbortController();
    const heard: unknown[] = [];
    controller.onAbort((reason) => heard.push(reason));
    controller.abort('first');
    controller.abort('second');
    expect(heard).toEqual(['first']);
    expect(controller.signal.reason).toBe('first');
  });

  it('tells a listener registered after the abort at once, and none that unregistered', () => {
    const controller = new AttemptAbortController();
    const heard: unknown[] = [];
    const stop = controller.onAbort((reason) => heard.push(`gone ${String(reason)}`));
    stop();
    controller.abort('why');
    controller.onAbort((reason) => heard.push(`late ${String(reason)}`));
    expect(heard).toEqual(['late why']);
  });
});
