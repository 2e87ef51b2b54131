import { isConnectionError, isNotSentError } from '../database/connection-errors.js';
import { DatabaseUnreachableError } from '../errors/jobs.errors.js';

/**
 * What an enqueue's failure is thrown as: a connection error becomes one `DatabaseUnreachableError`
 * that says whether the jobs may have been written, so that a caller has one error to catch and
 * retry on; any other error (a refused statement, a typed error of ours) is thrown unchanged.
 *
 * A lost answer is not a lost write: the insert is one statement, which commits on the server
 * whether or not its answer comes back. Only a connection that was never made proves that nothing
 * was written.
 */
export function enqueueError(err: unknown, jobs: number): unknown {
  if (!isConnectionError(err)) return err;
  const doing = `enqueueing ${jobs === 1 ? 'a job' : `${jobs} jobs`}`;
  if (isNotSentError(err)) {
    return new DatabaseUnreachableError(doing, err, {
      advice: 'Nothing was written: call it again once the database is back.',
    });
  }
  return new DatabaseUnreachableError(doing, err, {
    mayHaveWritten: true,
    advice:
      'The connection was lost after the insert was sent, so it may have committed all the same ' +
      '(unless it ran in a transaction of yours, with a manager, which the lost connection rolled back). ' +
      'A retry is safe with a uniqueKey: while the first job is pending, the retry returns it (deduplicated) ' +
      'instead of adding a second one; without one, a retry may add the job twice.',
  });
}
