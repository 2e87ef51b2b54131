import type { SchemaName } from '../database/schema-name.js';
import { DEFAULT_PARTITION, isTimePartitionName } from './partition-range.js';

/** The partitioned index of history's errors, and the suffix of its part on each partition. */
export const ERROR_SEARCH_INDEX = 'job_history_error_trgm';
const PART_SUFFIX = '_error_trgm';

/**
 * The statements that keep the error search index: a trigram index of history's last errors, which
 * turns a search by error text (`ILIKE '%…%'`) into an index look-up. DDL takes no parameters: the
 * names that enter its text are the library's own partitions' (checked again here), the extension's
 * schema is quoted by PostgreSQL (`quote_ident`).
 */
export function errorSearchIndexSql(schema: SchemaName) {
  const s = schema.quoted;
  const parent = `${s}."jobHistory"`;
  const partition = (name: string) => {
    if (!isTimePartitionName(name) && name !== DEFAULT_PARTITION) {
      throw new Error(`${name} is not a partition of jobHistory`);
    }
    return name;
  };
  const using = (trigramSchema: string) =>
    `USING gin ("lastErrorMessage" ${trigramSchema}.gin_trgm_ops) WHERE "lastErrorMessage" IS NOT NULL`;

  return {
    /** The schema pg_trgm is installed in, quoted; no row when it is not installed. */
    trigramSchema: `
      SELECT quote_ident(n.nspname) AS schema
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
      WHERE e.extname = 'pg_trgm'`,

    /**
     * Installs pg_trgm in the module's schema, where its functions stay out of the app's way. A
     * trusted extension: a role that may create objects in the database may install it.
     */
    installTrigram: `CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA ${s}`,

    /** The partitioned index itself: nothing is built (ON ONLY); SHARE on the parent, briefly. */
    createParent: (trigramSchema: string) =>
      `CREATE INDEX IF NOT EXISTS ${ERROR_SEARCH_INDEX} ON ONLY ${parent} ${using(trigramSchema)}`,

    /**
     * The partitions of history that have no part of the index attached; none while the index is
     * not made. $1 the index's qualified name.
     */
    partitionsWithout: `
      SELECT c.relname AS name, pg_relation_size(c.oid)::float8 AS bytes
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = '${parent}'::regclass AND to_regclass($1) IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM pg_inherits p JOIN pg_index x ON x.indexrelid = p.inhrelid
                        WHERE p.inhparent = to_regclass($1) AND x.indrelid = c.oid)
      ORDER BY c.relname`,

    /** The name of `name`'s part of the index. */
    partName: (name: string) => partition(name) + PART_SUFFIX,

    /**
     * Builds `name`'s part: `CONCURRENTLY`, without stopping the partition's writes, or at once,
     * holding them for the build (a SHARE lock), which a transaction's lock timeout can bound.
     */
    buildPart: (name: string, trigramSchema: string, concurrently: boolean) =>
      `CREATE INDEX ${concurrently ? 'CONCURRENTLY ' : ''}IF NOT EXISTS "${partition(name)}${PART_SUFFIX}"
       ON ${s}."${partition(name)}" ${using(trigramSchema)}`,

    /** Drops what a failed build left of `name`'s part (never an attached one: see `build`). */
    dropPart: (name: string) => `DROP INDEX IF EXISTS ${s}."${partition(name)}${PART_SUFFIX}"`,

    /** Makes a built part the index's part for its partition (no scan; brief locks). */
    attachPart: (name: string) =>
      `ALTER INDEX ${s}.${ERROR_SEARCH_INDEX} ATTACH PARTITION ${s}."${partition(name)}${PART_SUFFIX}"`,
  };
}
