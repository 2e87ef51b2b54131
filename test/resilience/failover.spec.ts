import { Injectable } from '@nestjs/common';
import pg from 'pg';
import { DatabaseUnreachableError, JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { createDatabase } from 'nestjs-pg-jobs/testing';
import { LISTEN_RECONNECT_MAX_MS } from '../../libs/jobs/src/notify/notification-listener.js';
import { TcpProxy } from '../fixtures/instance/tcp-proxy.js';
import { failoverClusterUnavailable, startFailoverCluster } from '../support/failover-cluster.js';
import type { FailoverCluster } from '../support/failover-cluster.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { describeWhereAvailable } from '../support/required-suite.js';

const POLLING_CHECK_S = 1;
const CONCURRENCY = 8;
/** How long each job's task takes: long enough that attempts are in flight at the cut. */
const TASK_MS = 40;
/** One enqueue every this many ms: well under what the instance drains, so no backlog builds. */
const ENQUEUE_EVERY_MS = 20;
/** How long the switch reaches a standby that is not yet promoted, when it does. */
const READ_ONLY_LAG_MS = 1_500;
/** Jobs held running across the cut, whose endings are then written during the outage. */
const HELD = 4;
/**
 * What the issue allows for anything to come back after the switch (the reconnect backoff plus one
 * `pollingCheck`), plus room for a loaded machine: two cores shared by a parallel suite.
 */
const RESUME_WITHIN_MS = LISTEN_RECONNECT_MAX_MS + POLLING_CHECK_S * 1000 + 2_000;

/** Each run of a job's task, by job id, in the order they started. */
const runs = new Map<string, { startedAt: number; endedAt?: number }[]>();
/** Lets the tasks of `held` jobs end: the test opens it once the primary is gone. */
let releaseHeld: () => void;
let heldReleased: Promise<void>;

interface RecordPayload {
  ms: number;
  /** Runs until `releaseHeld()`, then `ms` more. */
  held?: boolean;
}

@JobTask('failover.record')
@Injectable()
class RecordTask implements JobTaskHandler<RecordPayload> {
  async run(payload: RecordPayload, ctx: JobContext): Promise<string> {
    const run: { startedAt: number; endedAt?: number } = { startedAt: Date.now() };
    runs.set(ctx.id, [...(runs.get(ctx.id) ?? []), run]);
    if (payload.held) await heldReleased;
    await new Promise((resolve) => setTimeout(resolve, payload.ms));
    run.endedAt = Date.now();
    return ctx.id;
  }
}

/** A job whose `addJob` resolved, and what its awaited promise came to. */
interface Enqueued {
  id: string;
  enqueuedAt: number;
  settledAt?: number;
  outcome?: 'resolved' | Error;
}

/**
 * Enqueues one awaited job every `ENQUEUE_EVERY_MS` until stopped, as an app under steady traffic
 * does, keeping what each `addJob` came to: the jobs it resolved with, the errors it threw.
 */
function steadyLoad(app: JobsApp) {
  const enqueued: Enqueued[] = [];
  const refused: Error[] = [];
  const enqueue = async (payload: RecordPayload): Promise<Enqueued> => {
    const { id, promise } = await app.queue.addJob({
      task: 'failover.record',
      payload,
      promise: true,
    });
    const job: Enqueued = { id, enqueuedAt: Date.now() };
    enqueued.push(job);
    promise!.then(
      () => Object.assign(job, { settledAt: Date.now(), outcome: 'resolved' }),
      (err: Error) => Object.assign(job, { settledAt: Date.now(), outcome: err }),
    );
    return job;
  };
  let running = true;
  const done = (async () => {
    while (running) {
      const next = new Promise((resolve) => setTimeout(resolve, ENQUEUE_EVERY_MS));
      await enqueue({ ms: TASK_MS }).catch((err: Error) => refused.push(err));
      await next;
    }
  })();
  return {
    enqueued,
    refused,
    /** Enqueues `count` held jobs, resolving once all of them are running. */
    hold: async (count: number) => {
      const held = await Promise.all(
        Array.from({ length: count }, () => enqueue({ ms: TASK_MS, held: true })),
      );
      await waitFor('the held jobs to be running', () => held.every((job) => runs.has(job.id)));
    },
    stop: () => {
      running = false;
      return done;
    },
  };
}

describeWhereAvailable({
  file: 'test/resilience/failover.spec.ts',
  requiredBy: 'REQUIRE_FAILOVER',
  unavailable: failoverClusterUnavailable,
  howToRun: 'Install the PostgreSQL server (Debian package postgresql-15) to run it',
})('a PostgreSQL failover to a synchronous standby', () => {
  let cluster: FailoverCluster;
  let proxy: TcpProxy;
  let app: JobsApp;
  let database: string;
  /** The promoted standby, reached directly. */
  let promoted: pg.Pool;

  beforeEach(async () => {
    runs.clear();
    heldReleased = new Promise((resolve) => (releaseHeld = resolve));
    cluster = await startFailoverCluster();
    const db = await createDatabase(cluster.primary.url(), 'jobs_failover');
    database = db.name;
    proxy = new TcpProxy(cluster.primary.host, cluster.primary.port);
    await proxy.up();
    app = await startJobsApp(proxy.rewrite(db.url), {
      tasks: [RecordTask],
      options: { instanceId: 'failover', pollingCheck: POLLING_CHECK_S, concurrency: CONCURRENCY },
    });
  }, 120_000);

  afterEach(async () => {
    releaseHeld();
    await app?.close();
    await promoted?.end();
    await proxy?.down();
    await cluster?.stop();
  });

  it.each([
    ['promoted, then switched to (as a proxy that checks health does)', 'promote-then-switch'],
    [
      'switched to while still a read-only standby, then promoted (as a DNS name that lags does)',
      'switch-then-promote',
    ],
  ] as const)(
    'the standby %s: no enqueued job is lost, none runs twice, and claims, LISTEN and awaited promises resume within the reconnect backoff plus one pollingCheck',
    async (_how, order) => {
      const load = steadyLoad(app);
      const settled = () => load.enqueued.filter((job) => job.settledAt).length;
      await waitFor('the steady load to complete 30 jobs', () => settled() >= 30, 20_000);

      // Attempts in flight at the cut, that end during it: their endings meet the outage.
      await load.hold(HELD);

      // The cut: the primary dies; the standby is promoted, and the proxy sends new connections there.
      await cluster.crashPrimary();
      const cutAt = Date.now();
      if (order === 'promote-then-switch') {
        releaseHeld();
        await cluster.promoteStandby();
        proxy.repoint(cluster.standby.host, cluster.standby.port);
      } else {
        // What a read-only server answers a write with (SQLSTATE 25006) reaches the app first: its
        // enqueues (as DatabaseUnreachableError, nothing written), claims and endings meet it until
        // the promotion.
        proxy.repoint(cluster.standby.host, cluster.standby.port);
        await waitFor('an enqueue to meet the read-only standby', () =>
          load.refused.some(
            (err) =>
              err instanceof DatabaseUnreachableError &&
              !err.mayHaveWritten &&
              (err.cause as { code?: string }).code === '25006',
          ),
        );
        releaseHeld();
        // The lag is the scenario itself, not a wait for something to happen.
        await new Promise((resolve) => setTimeout(resolve, READ_ONLY_LAG_MS));
        await cluster.promoteStandby();
      }
      const switchedAt = Date.now();
      promoted = new pg.Pool({ connectionString: cluster.standby.url(database), max: 2 });
      promoted.on('error', () => undefined);

      // Claims resume: a job enqueued after the switch runs.
      const firstRunAfter = await waitFor(
        'a job to start on the promoted standby',
        () => {
          const starts = [...runs.values()].flat().map((run) => run.startedAt);
          return starts.filter((at) => at > switchedAt).sort((a, b) => a - b)[0];
        },
        RESUME_WITHIN_MS * 2,
      );
      expect(firstRunAfter - switchedAt).toBeLessThanOrEqual(RESUME_WITHIN_MS);

      // LISTEN resumes, on the new primary.
      await waitFor(
        'the LISTEN session to be back, on the promoted standby',
        async () => {
          const rows = await promoted.query(
            `SELECT 1 FROM pg_stat_activity
           WHERE application_name = 'nestjs-pg-jobs failover:listen' AND query LIKE 'LISTEN %'`,
          );
          return rows.rowCount === 1;
        },
        RESUME_WITHIN_MS,
      );
      const listenBackAt = Date.now();
      expect(listenBackAt - switchedAt).toBeLessThanOrEqual(RESUME_WITHIN_MS);

      // Awaited promises resume: every one pending at the cut settles.
      const pendingAtCut = load.enqueued.filter(
        (job) => job.enqueuedAt <= cutAt && !(job.settledAt && job.settledAt <= cutAt),
      );
      await waitFor(
        'every promise pending at the cut to settle',
        () => pendingAtCut.every((job) => job.settledAt),
        RESUME_WITHIN_MS * 2,
      );
      for (const job of pendingAtCut) {
        expect(job.outcome).toBe('resolved');
        expect(job.settledAt! - switchedAt).toBeLessThanOrEqual(RESUME_WITHIN_MS);
      }

      // Traffic after the switch, then the end of the load: every promise settles.
      await waitFor(
        '30 more jobs to complete after the switch',
        () =>
          load.enqueued.filter((job) => job.enqueuedAt > switchedAt && job.settledAt).length >= 30,
        20_000,
      );
      await load.stop();
      await waitFor(
        'every awaited promise to settle',
        () => load.enqueued.every((job) => job.settledAt),
        RESUME_WITHIN_MS * 2,
      );
      expect(load.enqueued.filter((job) => job.outcome !== 'resolved')).toEqual([]);

      // Every job whose addJob resolved is on the new primary, completed, and nothing is left.
      const ids = load.enqueued.map((job) => job.id);
      const { rows: history } = await promoted.query<{ id: string; state: string }>(
        `SELECT id, state FROM jobs."jobHistory" WHERE id = ANY($1::uuid[])`,
        [ids],
      );
      expect(history).toHaveLength(ids.length);
      expect(history.filter((row) => row.state !== 'completed')).toEqual([]);
      const { rows: unfinished } = await promoted.query(
        `SELECT id, state FROM jobs."jobHistory" WHERE state NOT IN ('completed')
       UNION ALL SELECT id, 'queued' FROM jobs.jobs`,
      );
      expect(unfinished).toEqual([]);

      // Nothing ran twice. The at-least-once window allows an attempt in flight at the cut to run
      // again, but this instance lived through the cut: an ending it could not write then is
      // written once the new primary takes writes (a try that committed but lost its reply is
      // fenced), and a claim that lost its reply is given back unconsumed, never run twice.
      const ranAgain = [...runs.entries()]
        .filter(([, jobRuns]) => jobRuns.length > 1)
        .map(([id, jobRuns]) => ({
          id,
          runs: jobRuns.map((run) => ({
            started: run.startedAt - cutAt,
            ended: run.endedAt && run.endedAt - cutAt,
          })),
        }));
      expect(ranAgain).toEqual([]);
    },
    120_000,
  );
});
