import type { StandardJSONSchemaV1, StandardSchemaV1 } from './standard-schema.js';

/**
 * The JSON Schema (draft 2020-12) of what a `payloadSchema` accepts, the input a producer sends,
 * when its library implements Standard JSON Schema (`~standard.jsonSchema`, as zod 4 does);
 * `undefined` when it does not, or cannot convert this schema (a transform, a custom check).
 */
export function payloadJsonSchema(
  schema: StandardSchemaV1 | undefined,
): Record<string, unknown> | undefined {
  const converter = (schema?.['~standard'] as Partial<StandardJSONSchemaV1.Props> | undefined)
    ?.jsonSchema;
  if (typeof converter?.input !== 'function') return undefined;
  try {
    return converter.input({ target: 'draft-2020-12' });
  } catch {
    return undefined;
  }
}
