/**
 * `npm run bench:attempts`: what recording an attempt costs, counted, for today's model and for the
 * ways issue 28 (item 1) proposes to record a finished attempt once, at its end. Each variant
 * drains `BENCH_ATTEMPT_JOBS` (default 10,000) queued no-op jobs, queued by the library itself, on
 * a fresh database of its own: claimed in batches of 50 and completed in one statement per batch,
 * the completion of a batch written while the next claim runs (as the runner's `CompletionBatcher`
 * does under a drain). The variants:
 *
 * - `today`: the library's own claim and completion (`runnerSql`): the claim deletes the queued row
 *   and inserts an `active` history row, the completion updates that row;
 * - `kept, marked`: the queued row stays in `jobs` while its attempt runs, marked by a claim token
 *   (and its instance and start), which takes it out of a partial claim index; the end deletes it
 *   and inserts the finished history row, in one statement;
 * - `kept, marked (HOT)`: the same, but the claim changes no indexed column and the table leaves
 *   room on its pages (fillfactor 50), so that the mark is a heap-only update; the claim's walk
 *   then steps over the running rows, whose index entries stay;
 * - `attempts table`: the claim moves the job to a table of active attempts (what a reaper needs
 *   to requeue it, and the attempt's fence), the end deletes it there and inserts the finished
 *   history row.
 *
 * Per job, for each (counted with `bench/db-costs.ts`): WAL bytes (the records of this database
 * and their commits, read with pg_walinspect between the server's insert positions around the
 * drain, which starts after a `CHECKPOINT`, so that the first write of every page pays its
 * full-page image as it would in production; and the server-wide distance, which other databases'
 * writes inflate), statements, and rows inserted, updated (HOT apart), deleted and left dead, by
 * table. Autovacuum is off on the
 * drained tables, so that the WAL is the statements' own. The drain's rate is reported only as a
 * ratio to `today` in the same run (`BENCH_REPETITIONS` interleaved runs, default 3, each
 * repetition starting one variant further on): it depends on the machine's load, the counts do not.
 */
import 'reflect-metadata';
import pg from 'pg';
import { costPoint, costsBetween, keepingWal } from './db-costs.js';
import type { Costs, TableRows } from './db-costs.js';
import { formatFigure, openBenchServer, writeResults } from './harness.js';
import { runnerSql, toSchemaName } from './internals.js';
import { queueBacklog } from './library.js';
import { summarise } from './stats.js';
import { JOBS, REPETITIONS } from './workloads.js';

const BATCH = 50;
const QUEUED = Number(process.env.BENCH_ATTEMPT_JOBS ?? JOBS);
const INSTANCE = 'bench';
const CLAIM_VALUES = { limit: BATCH, executedBy: INSTANCE, tasks: ['noop'], queues: ['default'] };

/** A claimed attempt: what every write that ends it names. */
interface Attempt {
  id: string;
  attempt: number;
  claim: string;
}

/** One way of recording attempts: its schema changes, its claim and its end. */
interface Variant {
  /** Run once the library's schema exists and before the backlog is queued. */
  beforeBacklog?: string;
  /** Run once the backlog is queued (statements on a quiet database, before the checkpoint). */
  afterBacklog?: string;
  /** The tables whose rows and dead tuples are reported. */
  tables: readonly string[];
  claim(client: pg.Pool): Promise<Attempt[]>;
  complete(client: pg.Pool, attempts: readonly Attempt[]): Promise<number>;
}

const sql = runnerSql(toSchemaName('jobs'));

/** `today`: the library's statements, with their binders. */
const today: Variant = {
  tables: ['jobs', 'jobHistory'],
  async claim(pool) {
    const { rows } = await pool.query<Attempt>({
      name: sql.claim.name,
      text: sql.claim.text,
      values: sql.claim.values(CLAIM_VALUES),
    });
    return rows;
  },
  async complete(pool, attempts) {
    const { rowCount } = await pool.query({
      name: sql.complete.name,
      text: sql.complete.text,
      values: sql.complete.values({
        completions: attempts.map((job) => ({ job, result: null })),
        channel: 'jobs',
      }),
    });
    return rowCount ?? 0;
  },
};

/** The pick of every claim: today's, with `queued` (a condition on the row) when given. */
const pick = (queued = 'true') => `
  SELECT ctid FROM jobs.jobs
  WHERE ${queued} AND "waitUntil" <= now() AND CASE WHEN task = ANY($3::text[]) THEN true END
  ORDER BY priority DESC, "waitUntil", seq
  LIMIT $1
  FOR UPDATE SKIP LOCKED`;

/** What a claim returns of each claimed job `c` (today's columns), `claim` its token. */
const claimed = (claim: string) => `
  c.id, c.task, c.payload, c.priority, c.retries + 1 AS attempt, c."maxRetries", c."traceContext",
  false AS skipped, NULL::text AS "skipReason", c.queue, ${claim} AS claim`;

/**
 * The finished history row of each `done` row (a job row, or an active attempt, with the columns
 * both share and `attempt`, `result`), upserted: a job retried or snoozed earlier has one already.
 */
const recordEnded = `
  INSERT INTO jobs."jobHistory" AS h (id, task, state, payload, priority, attempt, "maxRetries",
                                      "wasScheduled", awaited, "executedBy", "createdAt", "startedAt",
                                      "completedAt", "traceContext", queue, "groupKey", "claimToken",
                                      result, progress)
  SELECT id, task, 'completed', payload, priority, attempt, "maxRetries", "isScheduled", awaited,
         "executedBy", "createdAt", "startedAt", now(), "traceContext", queue, "groupKey",
         "claimToken", result, progress
  FROM done
  ON CONFLICT (id) DO UPDATE SET
    state = EXCLUDED.state, attempt = EXCLUDED.attempt, "maxRetries" = EXCLUDED."maxRetries",
    "executedBy" = EXCLUDED."executedBy", "startedAt" = EXCLUDED."startedAt",
    "completedAt" = EXCLUDED."completedAt", queue = EXCLUDED.queue, "groupKey" = EXCLUDED."groupKey",
    "claimToken" = EXCLUDED."claimToken", result = EXCLUDED.result, progress = EXCLUDED.progress,
    awaited = h.awaited OR EXCLUDED.awaited, "updatedAt" = now()
  RETURNING id, awaited`;

/** The completions of a batch, as the library's statement takes them: $1 ids $2 attempts $3 results $4 tokens. */
const completionValues = (attempts: readonly Attempt[]) => [
  attempts.map((a) => a.id),
  attempts.map((a) => a.attempt),
  attempts.map(() => null),
  attempts.map((a) => a.claim),
];

/** A variant's claim and end as prepared statements named after the variant. */
function statements(name: string, claimText: string, endText: string) {
  return {
    async claim(pool: pg.Pool) {
      const values = [BATCH, INSTANCE, CLAIM_VALUES.tasks, CLAIM_VALUES.queues];
      const { rows } = await pool.query<Attempt>({
        name: `${name}_claim`,
        text: claimText,
        values,
      });
      return rows;
    },
    async complete(pool: pg.Pool, attempts: readonly Attempt[]) {
      const values = completionValues(attempts);
      const { rowCount } = await pool.query({ name: `${name}_end`, text: endText, values });
      return rowCount ?? 0;
    },
  };
}

/**
 * `kept, marked`: the claim marks the row (a token from the queue's own sequence, so that no token
 * ever equals a claim token of today's model, the instance, the start, the claiming instance's
 * queue) and frees its unique key, as today's delete does; the mark takes it out of the claim
 * index (partial on "claimToken" IS NULL) and into the index of running rows.
 */
const keptColumns = `
  ALTER TABLE jobs.jobs ADD COLUMN "claimToken" bigint, ADD COLUMN "executedBy" text,
    ADD COLUMN "startedAt" timestamptz, ADD COLUMN progress jsonb`;
const keptClaim = (queued: string) => `
  WITH claimed AS (
    UPDATE jobs.jobs c
    SET "claimToken" = nextval('jobs.jobs_seq_seq'), "executedBy" = $2, "startedAt" = now(),
        "uniqueKey" = NULL, queue = ($4::text[])[array_position($3::text[], c.task)]
    WHERE ctid = ANY(ARRAY(${pick(queued)}))
    RETURNING c.*
  )
  SELECT ${claimed('c."claimToken"')} FROM claimed c ORDER BY priority DESC, "waitUntil", seq`;
/** The end: the fenced delete of the marked row and its history row, one statement. */
const keptEnd = `
  WITH done AS (
    DELETE FROM jobs.jobs j
    USING unnest($1::uuid[], $2::int[], $3::jsonb[], $4::bigint[]) AS c(id, attempt, result, claim)
    WHERE j.id = c.id AND j."claimToken" = c.claim AND j.retries + 1 = c.attempt
    RETURNING j.*, j.retries + 1 AS attempt, c.result
  ), recorded AS (${recordEnded})
  SELECT id FROM recorded`;

const kept: Variant = {
  afterBacklog: `
    ${keptColumns};
    CREATE INDEX jobs_claim_queued ON jobs.jobs (priority DESC, "waitUntil", seq)
      WHERE "claimToken" IS NULL;
    DROP INDEX jobs.jobs_claim_order;
    CREATE INDEX jobs_running ON jobs.jobs ("startedAt") WHERE "claimToken" IS NOT NULL`,
  tables: ['jobs', 'jobHistory'],
  ...statements('kept', keptClaim('"claimToken" IS NULL'), keptEnd),
};

/**
 * `kept, marked (HOT)`: the claim index stays whole (the running rows keep their entries, which
 * the claim's walk filters out on the heap), the mark's columns are in no index, and pages keep
 * half their room for the marked versions (fillfactor 50, set before the backlog is queued).
 */
const keptHot: Variant = {
  beforeBacklog: `ALTER TABLE jobs.jobs SET (fillfactor = 50); ${keptColumns}`,
  tables: ['jobs', 'jobHistory'],
  ...statements('kept_hot', keptClaim('"claimToken" IS NULL'), keptEnd),
};

/**
 * `attempts table`: one row per running attempt, with its fence and what a reaper, a release or a
 * cancel needs to requeue or record the job (its payload among them: the queued row is gone).
 */
const attemptsTable: Variant = {
  afterBacklog: `
    CREATE TABLE jobs."jobAttempts" (
      id uuid PRIMARY KEY,
      attempt integer NOT NULL,
      "claimToken" bigint NOT NULL,
      "executedBy" text NOT NULL,
      "startedAt" timestamptz NOT NULL,
      task text NOT NULL,
      queue text NOT NULL,
      "groupKey" text,
      awaited boolean NOT NULL,
      progress jsonb,
      payload jsonb NOT NULL,
      priority integer NOT NULL,
      "maxRetries" integer NOT NULL,
      "isScheduled" boolean NOT NULL,
      "createdAt" timestamptz NOT NULL,
      "traceContext" jsonb
    );
    CREATE INDEX job_attempts_started_at ON jobs."jobAttempts" ("startedAt");
    ALTER TABLE jobs."jobAttempts" SET (autovacuum_enabled = false)`,
  tables: ['jobs', 'jobHistory', 'jobAttempts'],
  ...statements(
    'attempts',
    `
    WITH claimed AS (
      DELETE FROM jobs.jobs c WHERE ctid = ANY(ARRAY(${pick()}))
      RETURNING *
    ), started AS (
      INSERT INTO jobs."jobAttempts" (id, attempt, "claimToken", "executedBy", "startedAt", task, queue,
                                      "groupKey", awaited, payload, priority, "maxRetries",
                                      "isScheduled", "createdAt", "traceContext")
      SELECT id, retries + 1, seq, $2, now(), task, ($4::text[])[array_position($3::text[], task)],
             "groupKey", awaited, payload, priority, "maxRetries", "isScheduled", "createdAt",
             "traceContext"
      FROM claimed
    )
    SELECT ${claimed('c.seq')} FROM claimed c ORDER BY priority DESC, "waitUntil", seq`,
    `
    WITH done AS (
      DELETE FROM jobs."jobAttempts" a
      USING unnest($1::uuid[], $2::int[], $3::jsonb[], $4::bigint[]) AS c(id, attempt, result, claim)
      WHERE a.id = c.id AND a.attempt = c.attempt AND a."claimToken" = c.claim
      RETURNING a.*, c.result
    ), recorded AS (${recordEnded})
    SELECT id FROM recorded`,
  ),
};

const VARIANTS: Record<string, Variant> = {
  today,
  'kept, marked': kept,
  'kept, marked (HOT)': keptHot,
  'attempts table': attemptsTable,
};

/** Drains the queue with `variant`: each batch's end written while the next claim runs. */
async function drain(pool: pg.Pool, variant: Variant): Promise<void> {
  let ending: Promise<number> = Promise.resolve(0);
  for (;;) {
    const attempts = await variant.claim(pool);
    await ending;
    if (attempts.length === 0) return;
    // Sorted, as the CompletionBatcher sorts its batch: two writes lock rows in one order.
    const batch = [...attempts].sort((a, b) => (a.id < b.id ? -1 : 1));
    ending = variant.complete(pool, batch);
  }
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

interface Run {
  ms: number;
  recorded: number;
  /** What the drain wrote: rows by table, WAL (this database's, full-page images, server-wide). */
  costs: Costs;
}

/** One drain of `QUEUED` jobs with `variant`, on a fresh database. */
async function run(url: string, variant: Variant): Promise<Run> {
  if (variant.beforeBacklog) {
    await queueBacklog(url, 'noop', 0);
    await withClient(url, (client) => client.query(variant.beforeBacklog!));
  }
  await queueBacklog(url, 'noop', QUEUED);
  await withClient(url, async (client) => {
    if (variant.afterBacklog) await client.query(variant.afterBacklog);
    for (const table of ['jobs', 'jobHistory']) {
      await client.query(`ALTER TABLE jobs."${table}" SET (autovacuum_enabled = false)`);
    }
    await client.query('ANALYZE jobs.jobs');
  });
  // Counted from a checkpoint, so that the first write of every page pays its full-page image.
  return keepingWal(url, { checkpoint: true }, async () => {
    const before = await costPoint(url);
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    let ms: number;
    try {
      const start = performance.now();
      await drain(pool, variant);
      ms = performance.now() - start;
    } finally {
      await pool.end();
    }
    const after = await costPoint(url);
    const recorded = await withClient(
      url,
      async (client) =>
        (
          await client.query(
            `SELECT count(*)::int AS n FROM jobs."jobHistory" WHERE state = 'completed'`,
          )
        ).rows[0].n,
    );
    if (recorded !== QUEUED) throw new Error(`bench:attempts: ${recorded} of ${QUEUED} recorded`);
    const costs = await costsBetween(url, before, after);
    if (costs.walScope !== 'database') throw new Error('bench:attempts: needs pg_walinspect');
    return { ms, recorded, costs };
  });
}

const server = await openBenchServer();
/** The settings the WAL figures depend on. */
const settings = await server.onFreshDatabase((url) =>
  withClient(
    url,
    async (client) =>
      (
        await client.query(
          `SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) AS s FROM pg_settings
           WHERE name IN ('full_page_writes', 'wal_compression', 'wal_log_hints', 'data_checksums',
                          'wal_level', 'server_version')`,
        )
      ).rows[0].s as string,
  ),
);
const runs = new Map<string, Run[]>(Object.keys(VARIANTS).map((name) => [name, []]));
const order = Object.entries(VARIANTS);
for (let i = 0; i < REPETITIONS; i++) {
  // Each repetition starts one variant further on: none always runs first.
  for (const [name, variant] of [
    ...order.slice(i % order.length),
    ...order.slice(0, i % order.length),
  ]) {
    const result = await server.onFreshDatabase((url) => run(url, variant));
    runs.get(name)!.push(result);
    console.error(`${name}: ${Math.round(result.costs.walBytes / QUEUED)} WAL bytes/job`);
  }
  console.error(`repetition ${i + 1}/${REPETITIONS} done`);
}
await server.stop();

const median = (values: readonly number[]) => summarise(values).median;
const perJob = (name: string, of: (run: Run) => number) => median(runs.get(name)!.map(of)) / QUEUED;
const rate = (name: string) => summarise(runs.get(name)!.map((r) => (QUEUED / r.ms) * 1000));
const todayRate = rate('today').median;

console.log(
  `\n${QUEUED} queued no-op jobs drained in batches of ${BATCH} (each batch's end written while the ` +
    `next claim runs, on 2 connections), ${REPETITIONS} interleaved runs per variant, PostgreSQL ` +
    `from ${server.source} (${settings}). Per job, medians of the runs; WAL from a CHECKPOINT before ` +
    `the drain, autovacuum off on the drained tables.\n`,
);
console.log(
  '| variant | WAL bytes (this database) | of which full-page images | WAL bytes (server-wide) | statements | drain rate ÷ today (min–max) |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
for (const name of runs.keys()) {
  const ratio = summarise(runs.get(name)!.map((r) => ((QUEUED / r.ms) * 1000) / todayRate));
  console.log(
    `| ${name} | ${Math.round(perJob(name, (r) => r.costs.walBytes))} | ` +
      `${Math.round(perJob(name, (r) => r.costs.walImages))} | ` +
      `${Math.round(perJob(name, (r) => r.costs.walServerWide))} | ` +
      `${perJob(name, (r) => r.costs.statements).toFixed(3)} | ${formatFigure(ratio)} |`,
  );
}
console.log('\nRows per job by table (inserted / updated, of which HOT / deleted; dead left):');
for (const name of runs.keys()) {
  const cells = VARIANTS[name].tables.map((table) => {
    const of = (key: keyof TableRows) =>
      perJob(name, (r) => r.costs.tables[`jobs.${table}`]?.[key] ?? 0).toFixed(2);
    return `${table} ${of('inserted')} / ${of('updated')}, HOT ${of('hot')} / ${of('deleted')}; dead ${of('dead')}`;
  });
  console.log(`- ${name}: ${cells.join('; ')}`);
}
console.log('\nWAL bytes per job by resource manager (this database):');
for (const [name, variantRuns] of runs) {
  const managers = Object.keys(variantRuns[0].costs.walByManager).sort();
  console.log(
    `- ${name}: ${managers
      .map((m) => `${m} ${Math.round(perJob(name, (r) => r.costs.walByManager[m] ?? 0))}`)
      .join('; ')}`,
  );
}
const file = writeResults('attempt-recording', {
  jobs: QUEUED,
  batch: BATCH,
  settings,
  runs: Object.fromEntries(runs),
  todayJobsPerSecondMedian: todayRate,
});
console.log(`\nWritten to ${file}`);
