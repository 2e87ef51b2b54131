import { createHash } from 'node:crypto';
import { toSchemaName } from '../database/schema-name.js';
import { MIGRATIONS } from './migrations.js';
import type { Migration } from './migrations.js';

const schema = toSchemaName('jobs');
const text = (migration: Migration) =>
  migration.transactional === false
    ? JSON.stringify(migration.statements(schema))
    : migration.sql(schema);
const squash = (sql: string) => sql.replace(/\s+/g, ' ').trim();

/** Tables that can be large on a live fleet: their indexes are built without blocking writes. */
const LARGE_TABLES = /(jobs|"jobHistory"|"jobScheduleSlot")/;

describe('MIGRATIONS (the rules written at the top of migrations.ts)', () => {
  it('are numbered 1, 2, 3, ... without gaps', () => {
    expect(MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
  });

  it('never change once released: a database that applied one never runs it again', () => {
    // Append a migration instead of editing one; add its fingerprint here when it ships.
    const released: Record<number, string> = {
      1: '8389a5d406f2',
      2: 'c41747ff0d62',
      3: 'dd362c81716a',
      4: '116bec954c19',
      5: '32f5bd123c4b',
      6: '2693733fb4f2',
      7: 'a1f5575d1137',
      8: 'dd0360c5335d',
      9: 'cb6ddce3fb64',
      10: 'd9ce38fc5825',
      11: 'e896f62ef0ec',
      12: 'eb3380e2916b',
      13: 'e601be451855',
      14: '02793bb3601a',
      15: '92ee580842d3',
      16: '76584f1d59e8',
      17: 'eedbb74e7249',
      18: '8308b92ac1d0',
      19: '9adf49b30a07',
      20: '42888e551e3b',
    };
    const fingerprints = Object.fromEntries(
      MIGRATIONS.map((m) => [
        m.version,
        createHash('sha256').update(text(m)).digest('hex').slice(0, 12),
      ]),
    );
    expect(fingerprints).toEqual(released);
  });

  it('after version 4, build an index of a large table only CONCURRENTLY, outside a transaction', () => {
    for (const migration of MIGRATIONS.filter((m) => m.version > 4)) {
      if (migration.transactional !== false) {
        expect(squash(migration.sql(schema))).not.toMatch(
          new RegExp(`CREATE (UNIQUE )?INDEX [^;]* ON [^ ]*\\.${LARGE_TABLES.source}`),
        );
        continue;
      }
      for (const statement of migration.statements(schema)) {
        const sql = squash(statement.sql);
        if (/^CREATE (UNIQUE )?INDEX/.test(sql)) {
          // One index per statement, idempotent, and named so that an invalid leftover is repaired.
          expect(sql).toMatch(/^CREATE (UNIQUE )?INDEX CONCURRENTLY IF NOT EXISTS (\S+) ON /);
          expect(sql.match(/IF NOT EXISTS (\S+) ON/)?.[1]).toBe(statement.index);
          expect(sql).not.toContain(';');
        } else {
          expect(sql).toMatch(/^DROP INDEX CONCURRENTLY IF EXISTS [^;]+$/);
        }
      }
    }
  });
});
