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

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,39}$/;

export function toSchemaName(value: unknown): SchemaName {
  if (typeof value !== 'string' || !IDENTIFIER.test(value) || value.startsWith('pg_')) {
    throw new InvalidModuleOptionError(
      'schema',
      value,
      'must be a lower-case identifier of at most 40 characters (letters, digits, _; not starting with pg_)',
    );
  }
  return { name: value, quoted: `"${value}"` };
}
