/** An error class that names an option, its value and what was expected of it. */
type OptionErrorClass = new (option: string, value: unknown, expectation: string) => Error;

/**
 * Checks that `options` is an object whose every key is known. A misspelt option would otherwise
 * be ignored in silence and its default used instead.
 */
export function assertOptionsObject(
  options: unknown,
  known: ReadonlySet<string>,
  ErrorClass: OptionErrorClass,
): asserts options is Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ErrorClass('(options)', options, 'must be an object');
  }
  for (const [key, value] of Object.entries(options)) {
    if (!known.has(key)) throw new ErrorClass(key, value, 'is not an option');
  }
}
