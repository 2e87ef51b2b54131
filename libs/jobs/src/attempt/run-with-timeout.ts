import { JobTimeoutError } from '../errors/jobs.errors.js';
import type { AttemptAbortController } from './attempt-abort-controller.js';

/**
 * Waits for `task`, aborting `controller` after `seconds`, and resolves with what it resolved
 * with. The returned promise settles as soon as the controller aborts (its timeout, or shutdown),
 * with the abort's reason, whether or not the task heeds its signal: an attempt's end must not wait
 * on a task that ignores it.
 */
export function runWithTimeout<T>(
  task: Promise<T>,
  seconds: number,
  controller: AttemptAbortController,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => controller.abort(new JobTimeoutError(seconds)), seconds * 1000);
    const stopListening = controller.onAbort((reason) => {
      clearTimeout(timer);
      reject(reason);
    });
    const settled = () => {
      clearTimeout(timer);
      stopListening();
    };
    task.then(
      (value) => {
        settled();
        resolve(value);
      },
      (err: unknown) => {
        settled();
        reject(err);
      },
    );
  });
}
