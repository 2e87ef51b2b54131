import { SCHEMA_NAME_PATTERN, SCHEMA_NAME_RULE } from '../common/names.js';
import { InvalidModuleOptionError } from '../errors/jobs.errors.js';

/**
 * A validated schema name, quoted once. Identifiers cannot be bound as SQL parameters, so this is
 * the one place a name enters SQL text: lower-case letters, digits and underscores only.
 */
export interface SchemaName {
  /** The bare name, for parameters and channel names. */
  readonly name: string;
  /** The double-quoted identifier, for SQL text. */
  readonly quoted: string;
}

export function toSchemaName(value: unknown): SchemaName {
  if (typeof value !== 'string' || !SCHEMA_NAME_PATTERN.test(value)) {
    throw new InvalidModuleOptionError('schema', value, `must be ${SCHEMA_NAME_RULE}`);
  }
  return { name: value, quoted: `"${value}"` };
}
