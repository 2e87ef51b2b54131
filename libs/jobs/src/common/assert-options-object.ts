import type { OptionError } from './option-checks.js';

/**
 * Checks that `options` is an object whose every key is known. A misspelt option would otherwise
 * be ignored in silence and its default used instead.
 */
export function assertOptionsObject(
  options: unknown,
  known: ReadonlySet<string>,
  fail: OptionError,
): asserts options is Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw fail('(options)', options, 'must be an object');
  }
  for (const [key, value] of Object.entries(options)) {
    if (!known.has(key)) throw fail(key, value, 'is not an option');
  }
}
