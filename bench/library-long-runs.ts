/**
 * The library in the benches' long runs: the steady load of `npm run bench:horizon` (and
 * `bench:peers`), and the burn-down of a long queue (`npm run bench:burndown`). Their no-op task
 * does nothing per job but hand its payload on, so that a million jobs leave nothing behind in the
 * bench process (the other workloads' task records every start by id).
 */
import { Injectable } from '@nestjs/common';
import pg from 'pg';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { runnerSql, toSchemaName } from './internals.js';
import { databaseNow, queueBacklog, withApps } from './library.js';
import { pollUntil } from './stats.js';
import type { SteadyConsumer, TimedPayload } from './steady-load.js';

const TIMED = 'noop.timed';

/** What the running long run does with each job's payload as it starts. */
let onStart: (payload: TimedPayload) => void = () => undefined;

@JobTask({ name: TIMED })
@Injectable()
class TimedNoopTask implements JobTaskHandler<TimedPayload> {
  run(payload: TimedPayload): void {
    onStart(payload);
  }
}

const claim = runnerSql(toSchemaName('jobs')).claim;

export const librarySteady: SteadyConsumer = {
  schema: 'jobs',
  // The runner's own claim of 50, as an instance running only this task sends it.
  claim: [
    claim.text,
    claim.values({ limit: 50, executedBy: 'bench-probe', tasks: [TIMED], queues: ['default'] }),
  ],
  withConsumer(url, concurrency, started, load) {
    onStart = started;
    return withApps(
      url,
      { concurrency },
      1,
      (queue) =>
        load(async (jobs, payload) => {
          await queue.addJobs(Array.from({ length: jobs }, () => ({ task: TIMED, payload })));
        }),
      [TimedNoopTask],
    );
  },
};

/** A burn-down: when each slice of the queue had ended. */
export interface BurnDown {
  jobs: number;
  /** First claim to last completion, on the database's clock. */
  seconds: number;
  /** Jobs completed in each `bucketSeconds` from the first claim. */
  buckets: number[];
  /** Seconds from the first claim at which every `slice`-th job (and the last) had completed. */
  slices: { jobs: number; seconds: number }[];
}

/**
 * Queues `jobs` no-op jobs with no consumer running, then drains them with one instance at
 * `concurrency`; the rate over time is read afterwards from history's end times, so that the drain
 * is not slowed by counting a million rows while it runs (the bench only counts its own handler's
 * runs meanwhile).
 */
export async function burnDown(
  url: string,
  {
    jobs,
    concurrency,
    bucketSeconds,
    slice,
  }: Record<'jobs' | 'concurrency' | 'bucketSeconds' | 'slice', number>,
): Promise<BurnDown> {
  await queueBacklog(url, TIMED, jobs);
  const since = await databaseNow(url);
  let ran = 0;
  onStart = () => {
    ran++;
  };
  await withApps(
    url,
    { concurrency, pollingCheck: 0.5 },
    1,
    () => pollUntil(async () => ran >= jobs, Math.max(600_000, jobs * 10), 'the burn-down', 1000),
    [TimedNoopTask],
  );
  // The apps' shutdown drained every attempt in flight: every ending is written.
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const done = `FROM jobs."jobHistory" WHERE state = 'completed' AND "completedAt" >= $1`;
    const { rows } = await client.query(
      `SELECT count(*)::int AS n, min("startedAt") AS first,
              extract(epoch FROM max("completedAt") - min("startedAt")) AS seconds ${done}`,
      [since],
    );
    if (rows[0].n !== jobs) throw new Error(`bench: ${rows[0].n} of ${jobs} jobs completed`);
    const { first, seconds } = rows[0];
    const buckets = await client.query(
      `SELECT floor(extract(epoch FROM "completedAt" - $2) / $3)::int AS bucket, count(*)::int AS n
       ${done} GROUP BY 1 ORDER BY 1`,
      [since, first, bucketSeconds],
    );
    const counts: number[] = [];
    for (const { bucket, n } of buckets.rows) counts[bucket] = n;
    const slices = await client.query(
      `SELECT rn::int AS jobs, extract(epoch FROM "completedAt" - $2)::float8 AS seconds
       FROM (SELECT "completedAt", row_number() OVER (ORDER BY "completedAt") AS rn ${done}) x
       WHERE rn % $3 = 0 OR rn = $4 ORDER BY rn`,
      [since, first, slice, jobs],
    );
    return {
      jobs,
      seconds: Number(seconds),
      buckets: Array.from(counts, (n) => n ?? 0),
      slices: slices.rows,
    };
  } finally {
    await client.end();
  }
}
