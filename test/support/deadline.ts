/**
 * What `promise` settles with, or, once `ms` passed first, what `late` returns (or throws). The
 * deadline's timer is cleared either way: left pending, it would outlive the test file and keep
 * Jest's worker process from exiting ("A worker process has failed to exit gracefully").
 */
export async function withDeadline<T, Late = never>(
  promise: Promise<T>,
  ms: number,
  late: () => Late,
): Promise<T | Late> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<Late>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late());
      } catch (err) {
        reject(err);
      }
    }, ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** `late` for a deadline that fails the test. */
export const notSettledWithin = (what: string, ms: number) => (): never => {
  throw new Error(`${what} not settled within ${ms}ms`);
};
