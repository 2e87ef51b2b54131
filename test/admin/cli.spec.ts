import pg from 'pg';
import { installCompiledPackage } from '../support/compiled-package.js';
import type { CompiledApp } from '../support/compiled-package.js';
import { useTestDatabase } from '../support/test-database.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../../libs/jobs/src/schema/migrations.js';

/** `npx nestjs-pg-jobs ...`, run from the built package as an app installs it. */
const db = useTestDatabase();
let app: CompiledApp;
beforeAll(async () => {
  app = await installCompiledPackage();
}, 180_000);
afterAll(() => app?.remove());

/** The CLI, with no DATABASE_URL unless given. */
const cli = (args: readonly string[], env: NodeJS.ProcessEnv = {}) =>
  app.node(
    app.manifest.bin!['nestjs-pg-jobs'].replace(/^\.\//, 'node_modules/nestjs-pg-jobs/'),
    args,
    {
      DATABASE_URL: '',
      ...env,
    },
  );

it('is the package bin, a script Node runs as it is', async () => {
  expect(app.manifest.bin).toEqual({ 'nestjs-pg-jobs': './cli.js' });
  const { stdout, code } = await cli(['--help']);
  expect(code).toBe(0);
  expect(stdout).toMatch(/^Usage: nestjs-pg-jobs <command> \[options\]/);
});

it('migrate applies the migrations under the same lock as the module, then status reads them', async () => {
  // A peer mid-migration: the CLI waits for it, at most --lock-timeout.
  const holder = new pg.Client({ connectionString: db.url, application_name: 'peer-migrating' });
  await holder.connect();
  await holder.query(`SELECT pg_advisory_lock(hashtextextended('nestjs-pg-jobs:migrate:jobs', 0))`);
  const blocked = await cli(['migrate', '--connection', db.url, '--lock-timeout', '0.3']);
  await holder.end();
  expect(blocked.code).toBe(1);
  expect(blocked.stderr).toMatch(
    /holds the migration lock of schema "jobs".*held by: peer-migrating/,
  );

  const migrated = await cli(['migrate', '--connection', db.url]);
  expect(migrated).toMatchObject({ code: 0, stderr: '' });
  expect(migrated.stdout).toContain(`Applied migration 1: ${MIGRATIONS[0].name}`);
  expect(migrated.stdout).toContain(
    `Schema "jobs" is at version ${LATEST_SCHEMA_VERSION} (${MIGRATIONS.length} migrations applied).`,
  );
  expect((await cli(['migrate'], { DATABASE_URL: db.url })).stdout).toContain('(it was already)');

  // Jobs per task and state; a job queued again after a failed attempt counts as pending only.
  await db.query(
    `INSERT INTO jobs.jobs (id, task, "maxRetries") VALUES
       (gen_random_uuid(), 'sendEmail', 5), (gen_random_uuid(), 'sendEmail', 5),
       ('00000000-0000-4000-8000-000000000001', 'renderPdf', 5)`,
  );
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "completedAt") VALUES
       (gen_random_uuid(), 'sendEmail', 'completed', 1, 5, now(), now()),
       (gen_random_uuid(), 'renderPdf', 'failed', 6, 5, now(), now()),
       ('00000000-0000-4000-8000-000000000001', 'renderPdf', 'failed', 1, 5, now(), now())`,
  );
  const status = await cli(['status'], { DATABASE_URL: db.url });
  expect(status).toMatchObject({ code: 0, stderr: '' });
  expect(status.stdout.split('\n')).toEqual([
    `Schema "jobs": version ${LATEST_SCHEMA_VERSION}, expected ${LATEST_SCHEMA_VERSION} (up to date).`,
    '',
    'task       pending  active  completed  failed  interrupted  cancelled  skipped',
    'renderPdf        1       0          0       1            0          0        0',
    'sendEmail        2       0          1       0            0          0        0',
    '',
  ]);
});

it('status reports a schema that was never migrated as version 0', async () => {
  const { stdout, code } = await cli(['status', '--connection', db.url, '--schema', 'elsewhere']);
  expect(code).toBe(0);
  expect(stdout.trim()).toBe(
    `Schema "elsewhere": version 0, expected ${LATEST_SCHEMA_VERSION} (behind: run \`nestjs-pg-jobs migrate\`).`,
  );
});

it('sql prints the migrations as a script that builds the schema the module expects', async () => {
  const { stdout, code } = await cli(['sql', '--schema', 'dba_jobs']);
  expect(code).toBe(0);
  const online = MIGRATIONS.filter((m) => m.transactional === false);
  expect(online.length).toBeGreaterThan(0);
  const sections = stdout.split(/^(?=-- Migration \d+: )/m);
  expect(sections.slice(1).map((section) => /^-- Migration (\d+)/.exec(section)![1])).toEqual(
    MIGRATIONS.map((m) => String(m.version)),
  );
  for (const migration of MIGRATIONS) {
    const section = sections.find((s) => s.startsWith(`-- Migration ${migration.version}: `))!;
    expect(section.includes('NON-TRANSACTIONAL')).toBe(migration.transactional === false);
    expect(section.includes('BEGIN;')).toBe(migration.transactional !== false);
  }

  // Run as psql runs it: a transactional migration is one BEGIN ... COMMIT block, a
  // non-transactional one's statements go one at a time (CONCURRENTLY refuses a transaction).
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    await client.query(sections[0]);
    for (const section of sections.slice(1)) {
      if (!section.includes('NON-TRANSACTIONAL')) await client.query(section);
      else {
        for (const statement of section.split(/;\s*\n/).filter((s) => s.trim())) {
          await client.query(statement);
        }
      }
    }
  } finally {
    await client.end();
  }
  const status = await cli(['status', '--connection', db.url, '--schema', 'dba_jobs']);
  // The same indexes, all valid, as the migrator builds.
  await cli(['migrate', '--connection', db.url, '--schema', 'cli_jobs']);
  const indexes = (schema: string) =>
    db.query(
      `SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 ORDER BY c.relname`,
      [schema],
    );
  expect(status.stdout).toContain(
    `Schema "dba_jobs": version ${LATEST_SCHEMA_VERSION}, expected ${LATEST_SCHEMA_VERSION} (up to date).`,
  );
  expect(await indexes('dba_jobs')).toEqual(await indexes('cli_jobs'));
  expect(await indexes('dba_jobs')).toContainEqual({
    relname: 'job_history_state_ended_at',
    indisvalid: true,
  });

  const later = await cli(['sql', '--from', String(LATEST_SCHEMA_VERSION)]);
  expect(later.stdout.match(/^-- Migration \d+/gm)).toEqual([
    `-- Migration ${LATEST_SCHEMA_VERSION}`,
  ]);
});

it('says what is wrong with a command line, and exits 2', async () => {
  const none = await cli([]);
  expect(none.code).toBe(2);
  expect(none.stderr).toMatch(/^Give a command\.\n\nUsage: /);
  const noConnection = await cli(['status']);
  expect(noConnection.code).toBe(2);
  expect(noConnection.stderr).toMatch(/^"status" needs --connection <url>, or DATABASE_URL set\./);
  const badSchema = await cli(['sql', '--schema', 'Robert"; DROP']);
  expect(badSchema.code).toBe(2);
  expect(badSchema.stderr).toMatch(/"schema" must be a lower-case identifier/);
});
