import { InvalidContextArgumentError } from '../errors/jobs.errors.js';
import { MAX_RETRY_DELAY_LIMIT } from '../options/defaults.js';

/** The longest step (or event) name: it is a key of the job's checkpoints. */
export const MAX_STEP_NAME_LENGTH = 200;

/**
 * Throws `InvalidContextArgumentError` (naming `method`) unless `name` can name a step: a non-empty
 * string of at most `MAX_STEP_NAME_LENGTH` characters without `#`, which numbers the repeats of a
 * name in one run (`name#2`), so that a name of its own could never take a repeat's checkpoint.
 */
export function assertStepName(method: string, name: unknown): asserts name is string {
  if (
    typeof name !== 'string' ||
    name.length === 0 ||
    name.length > MAX_STEP_NAME_LENGTH ||
    name.includes('#')
  ) {
    throw new InvalidContextArgumentError(
      method,
      name,
      `takes a name: a non-empty string of at most ${MAX_STEP_NAME_LENGTH} characters, without "#"`,
    );
  }
}

/**
 * Throws `InvalidContextArgumentError` (naming `method`) unless `seconds` is a number of seconds a
 * job can wait: `ctx.snooze`'s, `ctx.sleep`'s, a wait's timeout.
 */
export function assertSeconds(method: string, seconds: unknown): asserts seconds is number {
  if (
    typeof seconds !== 'number' ||
    !Number.isFinite(seconds) ||
    seconds < 0 ||
    seconds > MAX_RETRY_DELAY_LIMIT
  ) {
    throw new InvalidContextArgumentError(
      method,
      seconds,
      `takes a number of seconds from 0 to ${MAX_RETRY_DELAY_LIMIT}`,
    );
  }
}

/**
 * The keys of one run's steps, in call order: a name's first call is the name itself, its later
 * calls `name#2`, `name#3`... Deterministic as long as the task calls its steps in the same order
 * on every run, which `Promise.all` over distinct names and a loop over one name both do.
 */
export class StepKeys {
  private readonly calls = new Map<string, number>();
  /** How many keys were handed out: the next one's position. */
  private count = 0;

  /** The key and position of the next call of `name`. */
  next(name: string): { key: string; position: number } {
    const call = (this.calls.get(name) ?? 0) + 1;
    this.calls.set(name, call);
    return { key: call === 1 ? name : `${name}#${call}`, position: this.count++ };
  }
}
