import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { Logger } from '@nestjs/common';
import type { LoggerService } from '@nestjs/common';
import { JOB_STATES } from '../common/job-states.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { toSchemaName } from '../database/schema-name.js';
import { JobsError } from '../errors/jobs.errors.js';
import {
  DEFAULT_MIGRATION_LOCK_TIMEOUT,
  DEFAULT_MIGRATION_TABLE_LOCK_TIMEOUT,
  DEFAULT_SCHEMA,
} from '../options/defaults.js';
import { LATEST_SCHEMA_VERSION } from '../schema/migrations.js';
import { migratorSql } from '../schema/schema-migrator.sql.js';
import { SchemaMigrator } from '../schema/schema-migrator.js';
import { cliSql } from './cli.sql.js';
import { migrationsSql } from './migrations-sql.js';

const USAGE = `Usage: nestjs-pg-jobs <command> [options]

Commands:
  migrate   apply the migrations the schema lacks (the migrator and lock JobsModule boots with)
  status    the schema's version (current and expected) and the jobs per task and state
  sql       print the migrations as plain SQL, for a DBA to review and run with psql

Options:
  --connection <url>    PostgreSQL connection string (default: $DATABASE_URL); migrate, status
  --schema <name>       schema of the module's tables (default: ${DEFAULT_SCHEMA})
  --lock-timeout <s>    migrate: seconds to wait while another instance migrates (default: ${DEFAULT_MIGRATION_LOCK_TIMEOUT})
  --table-lock-timeout <s>
                        migrate: seconds a statement waits for a table lock before retrying (default: ${DEFAULT_MIGRATION_TABLE_LOCK_TIMEOUT})
  --from <version>      sql: the first migration to print (default: 1)
  -h, --help            this help
`;

/** Where the CLI writes: the process's streams, or a test's. */
export interface CliOutput {
  out(line: string): void;
  err(line: string): void;
}

/** A mistake in the command line: the usage follows its message, and the exit code is 2. */
class UsageError extends Error {}

/** Runs one command line (the arguments after the program's name); resolves to the exit code. */
export async function runCli(argv: readonly string[], io: CliOutput): Promise<number> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse(argv);
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    io.out(USAGE);
    return 0;
  }
  Logger.overrideLogger(cliLogger(io));
  try {
    if (args.command === 'sql') io.out(migrationsSql(args.schema, args.from));
    else if (args.command === 'migrate') await migrate(args, io);
    else await status(args, io);
    return 0;
  } catch (err) {
    io.err(err instanceof JobsError ? err.message : String((err as Error)?.stack ?? err));
    return 1;
  }
}

function parse(argv: readonly string[]) {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      connection: { type: 'string' },
      schema: { type: 'string', default: DEFAULT_SCHEMA },
      'lock-timeout': { type: 'string', default: String(DEFAULT_MIGRATION_LOCK_TIMEOUT) },
      'table-lock-timeout': {
        type: 'string',
        default: String(DEFAULT_MIGRATION_TABLE_LOCK_TIMEOUT),
      },
      from: { type: 'string', default: '1' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [command, ...extra] = positionals;
  if (values.help) return { help: true } as const;
  if (command !== 'migrate' && command !== 'status' && command !== 'sql') {
    throw new UsageError(
      command ? `Unknown command ${JSON.stringify(command)}.` : 'Give a command.',
    );
  }
  if (extra.length) throw new UsageError(`Unexpected arguments: ${extra.join(' ')}.`);
  const connection = values.connection ?? process.env.DATABASE_URL;
  if (command !== 'sql' && !connection) {
    throw new UsageError(`"${command}" needs --connection <url>, or DATABASE_URL set.`);
  }
  return {
    help: false,
    command,
    connection: connection ?? '',
    schema: toSchemaName(values.schema),
    lockTimeout: positiveNumber('--lock-timeout', values['lock-timeout']),
    tableLockTimeout: positiveNumber('--table-lock-timeout', values['table-lock-timeout']),
    from: positiveNumber('--from', values.from),
  } as const;
}

type Command = Exclude<ReturnType<typeof parse>, { help: true }>;

async function migrate(args: Command, io: CliOutput): Promise<void> {
  await withDatabase(args, async (db) => {
    const applied = await new SchemaMigrator(db, {
      lockTimeout: args.lockTimeout,
      tableLockTimeout: args.tableLockTimeout,
    }).migrate();
    io.out(
      `Schema ${args.schema.quoted} is at version ${LATEST_SCHEMA_VERSION} ` +
        `(${applied === 0 ? 'it was already' : `${applied} migration${applied === 1 ? '' : 's'} applied`}).`,
    );
  });
}

async function status(args: Command, io: CliOutput): Promise<void> {
  await withDatabase(args, async (db) => {
    const sql = cliSql(args.schema);
    const [tables] = await db.query<{ migrations: boolean; history: boolean }>(sql.tables, [
      args.schema.name,
    ]);
    const version = tables.migrations
      ? ((await db.query<{ version: number | null }>(migratorSql(args.schema).currentVersion))[0]
          ?.version ?? 0)
      : 0;
    io.out(
      `Schema ${args.schema.quoted}: version ${version}, expected ${LATEST_SCHEMA_VERSION} ${verdict(version)}.`,
    );
    if (!tables.history) return;
    const counts = await db.query<{ task: string; state: string; count: number }>(
      sql.countsByState,
    );
    io.out(counts.length ? `\n${countsTable(counts)}` : '\nNo jobs.');
  });
}

function verdict(version: number): string {
  if (version === LATEST_SCHEMA_VERSION) return '(up to date)';
  if (version < LATEST_SCHEMA_VERSION) return '(behind: run `nestjs-pg-jobs migrate`)';
  return '(ahead: a newer nestjs-pg-jobs migrated it)';
}

/** One row per task, one column per state, the library's states first in their usual order. */
function countsTable(counts: readonly { task: string; state: string; count: number }[]): string {
  const found = new Set<string>(counts.map((c) => c.state));
  // `snoozed` is an attempt's state in history, rarely seen, `blocked` exists only in flows and
  // `suspended` only with durable steps: a column only when some row has it.
  const known: readonly string[] = JOB_STATES.filter(
    (s) => !['snoozed', 'blocked', 'suspended'].includes(s) || found.has(s),
  );
  const states = [...known, ...[...found].filter((state) => !known.includes(state)).sort()];
  const tasks = [...new Set(counts.map((c) => c.task))].sort();
  const cell = (task: string, state: string) =>
    String(counts.find((c) => c.task === task && c.state === state)?.count ?? 0);
  const rows = [
    ['task', ...states],
    ...tasks.map((task) => [task, ...states.map((s) => cell(task, s))]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  return rows
    .map((row) =>
      row
        .map((text, i) => (i === 0 ? text.padEnd(widths[i]) : text.padStart(widths[i])))
        .join('  '),
    )
    .join('\n');
}

async function withDatabase(args: Command, fn: (db: JobsDatabase) => Promise<void>): Promise<void> {
  const db = await JobsDatabase.connect({
    connection: { connectionString: args.connection, max: 1 },
    schema: args.schema,
    instanceId: `cli@${hostname()}:${process.pid}`,
    preparedStatements: false,
  });
  try {
    await fn(db);
  } finally {
    await db.close();
  }
}

function positiveNumber(option: string, text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) {
    throw new UsageError(`${option} must be a positive number; got ${JSON.stringify(text)}.`);
  }
  return value;
}

/** The migrator's progress on the output, its warnings on the error stream, without Nest's decorations. */
function cliLogger(io: CliOutput): LoggerService {
  return {
    log: (message: unknown) => io.out(String(message)),
    warn: (message: unknown) => io.err(String(message)),
    error: (message: unknown) => io.err(String(message)),
    debug: () => undefined,
    verbose: () => undefined,
  };
}
