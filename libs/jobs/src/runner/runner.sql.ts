import type { SchemaName } from '../database/schema-name.js';
import { claimSql } from './claim.sql.js';
import { endingSql } from './ending.sql.js';

/** The runner's statements: its claims (`claim.sql.ts`) and its endings (`ending.sql.ts`). */
export function runnerSql(schema: SchemaName) {
  return { ...claimSql(schema), ...endingSql(schema) };
}

export type RunnerSql = ReturnType<typeof runnerSql>;
