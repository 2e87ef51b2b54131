import type { JobsModuleOptions } from 'nestjs-pg-jobs';
import { startFailingBoot, startInstanceProcess } from '../fixtures/instance/instance-process.js';
import type { FailedBoot, InstanceProcess } from '../fixtures/instance/instance-process.js';
import { TcpProxy } from '../fixtures/instance/tcp-proxy.js';
import { startJobsApp, waitFor } from './jobs-app.js';
import type { AppSetup, JobsApp } from './jobs-app.js';
import { useTestDatabase } from './test-database.js';
import type { TestDatabase } from './test-database.js';

/** One run of the fixture processes' `record` task, recorded as it started. */
export interface Run {
  readonly jobId: string;
  readonly instance: string;
  readonly attempt: number;
  /** Database time. */
  readonly at: Date;
}

/**
 * Instances of the module on one fresh database of the test file: in-process Nest apps, or child
 * processes of `test/fixtures/instance` that a test can kill, pause and cut off. Each one is live
 * (booted, registered, claiming) when its start resolves; all are stopped after the file's tests,
 * before the database is dropped.
 */
export interface Cluster {
  readonly db: TestDatabase;
  /** An in-process instance under `instanceId`, with the cluster's options under the setup's own. */
  startApp(instanceId: string, setup?: AppSetup): Promise<JobsApp>;
  /** In-process instances booted together; `setup` may depend on the instance's id. */
  startApps(
    instanceIds: readonly string[],
    setup?: AppSetup | ((instanceId: string) => AppSetup),
  ): Promise<JobsApp[]>;
  /**
   * An in-process instance that only enqueues and reads jobs back: the test's hand on the queue.
   * It runs no jobs and reaps nothing, whatever the cluster's options: those are not given to it.
   */
  startEnqueuer(instanceId: string, options?: Partial<JobsModuleOptions>): Promise<JobsApp>;
  /** A child process running the fixture's `record` task. */
  startProcess(instanceId: string, options?: Partial<JobsModuleOptions>): Promise<InstanceProcess>;
  /** Child processes booted together. */
  startProcesses(
    instanceIds: readonly string[],
    options?: Partial<JobsModuleOptions>,
  ): Promise<InstanceProcess[]>;
  /**
   * A child process whose module reaches the database through a proxy the test takes down and
   * brings back; its task records runs over a direct connection, so runs are seen during an outage.
   */
  startProcessBehindProxy(
    instanceId: string,
    options?: Partial<JobsModuleOptions>,
  ): Promise<{ instance: InstanceProcess; proxy: TcpProxy }>;
  /** A child process whose boot is expected to fail; resolves with the failure. */
  startFailingBoot(instanceId: string, options?: Partial<JobsModuleOptions>): Promise<FailedBoot>;
  /**
   * SIGKILLs a process and waits until the server has closed every session of it (so no statement
   * it sent is still running). Resolves with the database time right after it exited.
   */
  kill(instance: InstanceProcess): Promise<Date>;
  /** Runs of the fixture processes' `record` task (of `jobIds` only, if given), in start order. */
  runs(jobIds?: readonly string[]): Promise<Run[]>;
  /** How many `jobHistory` rows are in each state (of `jobIds` only, if given). */
  states(jobIds?: readonly string[]): Promise<Record<string, number>>;
  /** The ids of the jobs `instanceId` is running, as the database sees it. */
  activeJobsOf(instanceId: string): Promise<string[]>;
  /** How many server sessions an instance still has (its pool, LISTEN session, ...). */
  backendCount(instanceId: string): Promise<number>;
}

/**
 * Liveness settings for tests that kill or pause instances: seconds instead of the defaults' half
 * minute, heartbeats a sixth of the timeout apart so a busy core does not get a live one reaped.
 */
export function fastLiveness(
  instanceTimeout: number,
  reaperInterval: number,
  concurrency: number,
): Partial<JobsModuleOptions> {
  return {
    heartbeatInterval: instanceTimeout / 6,
    instanceTimeout,
    scheduledCheck: reaperInterval,
    pollingCheck: 0.2,
    workers: 1,
    concurrency,
  };
}

/**
 * The calling test file's cluster. `options` go to every instance it starts but the enqueuer;
 * `databasePrefix` names the file's database.
 */
export function useCluster(
  setup: { options?: Partial<JobsModuleOptions>; databasePrefix?: string } = {},
): Cluster {
  const defaults = setup.options ?? {};
  const apps: JobsApp[] = [];
  const processes: InstanceProcess[] = [];
  const proxies: TcpProxy[] = [];

  // Registered before the database's own hooks: Jest runs afterAll hooks in declaration order,
  // and the instances must shut down (deregister, release their jobs) while it still exists.
  afterAll(async () => {
    await Promise.all(proxies.map((proxy) => proxy.up().catch(() => undefined)));
    await Promise.all([
      ...apps.map((app) => app.close()),
      ...processes.map((instance) => instance.stop()),
    ]);
    await Promise.all(proxies.map((proxy) => proxy.down()));
  });
  const db = useTestDatabase(setup.databasePrefix);
  // The fixture processes' `record` task writes one row here per run, as it starts.
  beforeAll(() =>
    db.query(`
      CREATE TABLE executions (
        job_id uuid NOT NULL,
        instance text NOT NULL,
        attempt integer NOT NULL,
        at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`),
  );

  const processOptions = (instanceId: string, options?: Partial<JobsModuleOptions>) => ({
    ...defaults,
    ...options,
    instanceId,
  });
  const tracked = async <T>(list: T[], starting: Promise<T>): Promise<T> => {
    const started = await starting;
    list.push(started);
    return started;
  };

  const cluster: Cluster = {
    db,
    startApp: (instanceId, appSetup = {}) =>
      tracked(
        apps,
        startJobsApp(db.url, {
          ...appSetup,
          options: { ...defaults, ...appSetup.options, instanceId },
        }),
      ),
    startApps: (instanceIds, appSetup = {}) =>
      Promise.all(
        instanceIds.map((instanceId) =>
          cluster.startApp(
            instanceId,
            typeof appSetup === 'function' ? appSetup(instanceId) : appSetup,
          ),
        ),
      ),
    startEnqueuer: (instanceId, options) =>
      tracked(
        apps,
        startJobsApp(db.url, {
          options: { ...options, runJobs: false, allowUnknownTasks: true, instanceId },
        }),
      ),
    startProcess: (instanceId, options) =>
      tracked(processes, startInstanceProcess(db.url, processOptions(instanceId, options))),
    startProcesses: (instanceIds, options) =>
      Promise.all(instanceIds.map((instanceId) => cluster.startProcess(instanceId, options))),
    async startProcessBehindProxy(instanceId, options) {
      const target = new URL(db.url);
      const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
      proxies.push(proxy);
      await proxy.up();
      const instance = await tracked(
        processes,
        startInstanceProcess(proxy.rewrite(db.url), processOptions(instanceId, options), db.url),
      );
      return { instance, proxy };
    },
    startFailingBoot: (instanceId, options) =>
      startFailingBoot(db.url, processOptions(instanceId, options)),
    async kill(instance) {
      instance.signal('SIGKILL');
      await instance.exited;
      const [{ now }] = await db.query<{ now: Date }>('SELECT clock_timestamp() AS now');
      await waitFor(
        `the sessions of the killed instance ${instance.id} to end`,
        async () => (await cluster.backendCount(instance.id)) === 0,
      );
      return now;
    },
    runs: (jobIds) =>
      db.query<Run>(
        `SELECT job_id AS "jobId", instance, attempt, at FROM executions
         WHERE $1::uuid[] IS NULL OR job_id = ANY($1::uuid[]) ORDER BY at`,
        [jobIds ?? null],
      ),
    async states(jobIds) {
      const rows = await db.query<{ state: string; n: number }>(
        `SELECT state, count(*)::int AS n FROM jobs."jobHistory"
         WHERE $1::uuid[] IS NULL OR id = ANY($1::uuid[]) GROUP BY state`,
        [jobIds ?? null],
      );
      return Object.fromEntries(rows.map((row) => [row.state, row.n]));
    },
    async activeJobsOf(instanceId) {
      const rows = await db.query<{ id: string }>(
        `SELECT id FROM jobs."jobHistory" WHERE state = 'active' AND "executedBy" = $1`,
        [instanceId],
      );
      return rows.map((row) => row.id);
    },
    async backendCount(instanceId) {
      const [row] = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND application_name LIKE $1`,
        [`nestjs-pg-jobs ${instanceId}%`],
      );
      return row.n;
    },
  };
  return cluster;
}
