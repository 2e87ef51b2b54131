/** Makes the error for an option that failed its check, naming the option and its value. */
export type OptionError = (option: string, value: unknown, expectation: string) => Error;

/** PostgreSQL's `integer`: what `maxRetries`, priorities and attempts are stored as. */
export const INT4_MAX = 2_147_483_647;

/**
 * The checks every option of the library goes through, module options and `@JobTask()` options
 * alike, so that one mistake reads the same wherever it is made.
 */
export function optionChecks(fail: OptionError) {
  return {
    integer(option: string, value: unknown, min: number, max = INT4_MAX): number {
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
        throw fail(
          option,
          value,
          `must be an integer >= ${min}${max === INT4_MAX ? '' : ` and <= ${max}`}`,
        );
      }
      return value;
    },

    seconds(option: string, value: unknown, fallback: number, zeroAllowed = false): number {
      if (value === undefined) return fallback;
      const ok =
        typeof value === 'number' &&
        Number.isFinite(value) &&
        (zeroAllowed ? value >= 0 : value > 0);
      if (!ok) {
        throw fail(
          option,
          value,
          `must be a ${zeroAllowed ? 'non-negative' : 'positive'} number of seconds`,
        );
      }
      return value;
    },

    flag(option: string, value: unknown, fallback: boolean): boolean {
      if (value === undefined) return fallback;
      if (typeof value !== 'boolean') throw fail(option, value, 'must be a boolean');
      return value;
    },
  };
}
