import { JobTimeoutError } from '../errors/jobs.errors.js';

/**
 * Runs `task` with a signal that aborts after `seconds`, or earlier through `controller`. The
 * returned promise settles as soon as the signal aborts, with the signal's reason, whether or not
 * the task heeds it: an attempt's end must not wait on a task that ignores its signal.
 */
export async function runWithTimeout(
  task: (signal: AbortSignal) => Promise<unknown> | unknown,
  seconds: number,
  controller: AbortController,
): Promise<void> {
  const { signal } = controller;
  const timer = setTimeout(() => controller.abort(new JobTimeoutError(seconds)), seconds * 1000);
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      (async () => task(signal))(),
      new Promise<never>((_resolve, reject) => {
        onAbort = () => reject(signal.reason);
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}
