import { JobContentionError } from '../errors/jobs.errors.js';

/** How often a statement that found its job moving between the queue and history runs again. */
const MAX_ROUNDS = 10;

/**
 * Runs `round` until it settles (returns a value): a round that found the job moving between the
 * queue and history returns `undefined`, and looks again on a fresh snapshot. After `MAX_ROUNDS`
 * such rounds it throws `JobContentionError`, naming `what` it was doing.
 */
export async function untilSettled<T>(
  what: string,
  round: () => Promise<T | undefined>,
): Promise<T> {
  for (let rounds = 0; rounds < MAX_ROUNDS; rounds++) {
    const settled = await round();
    if (settled !== undefined) return settled;
  }
  throw new JobContentionError(
    what,
    MAX_ROUNDS,
    'the job kept moving between the queue and its history',
  );
}
