import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { toError } from '../common/errors.js';
import { findInApp } from '../common/find-in-app.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { TaskRegistry } from '../discovery/task-registry.js';
import { JobEventEmitter } from '../events/job-event-emitter.js';
import type { JobEvent } from '../events/job-event.interface.js';
import type {
  JobsMetricsModuleOptions,
  MetricsRegistry,
} from './jobs-metrics-options.interface.js';
import { metricsSql } from './metrics.sql.js';

export const JOBS_METRICS_OPTIONS = Symbol('nestjs-pg-jobs:metrics-options');
/** prom-client, an optional peer: imported when `JobsMetricsModule` boots, never by the library's index. */
export const PROM_CLIENT = Symbol('nestjs-pg-jobs:prom-client');

const DEFAULT_PREFIX = 'nestjs_pg_jobs_';
/** Seconds: jobs run from milliseconds to the 300 s default `taskTimeout` and beyond. */
const DURATION_BUCKETS = [0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 300, 900];

/**
 * Prometheus metrics of the queue (prom-client).
 *
 * Every metric is labelled with the task and its queue (`queue`).
 *
 * Counters and the duration histogram count what this instance did (sum them across instances);
 * `queue_depth`, `blocked` and `active` are read from the database at each scrape and describe the whole
 * cluster (every instance reports the same values: aggregate them with `max`, not `sum`).
 *
 * @publicApi
 */
@Injectable()
export class JobsMetricsService implements OnModuleInit, OnModuleDestroy {
  /** The registry the metrics are in. */
  readonly registry: MetricsRegistry;
  private readonly logger = new Logger('JobsMetricsService');
  private readonly added: Counter<'task' | 'queue'>;
  private readonly completed: Counter<'task' | 'queue'>;
  private readonly failed: Counter<'task' | 'queue' | 'final'>;
  private readonly skipped: Counter<'task' | 'queue'>;
  private readonly cancelled: Counter<'task' | 'queue'>;
  private readonly retried: Counter<'task' | 'queue'>;
  private readonly snoozed: Counter<'task' | 'queue'>;
  private readonly gaveUp: Counter<'task' | 'queue'>;
  private readonly duration: Histogram<'task' | 'queue' | 'outcome'>;
  private db?: JobsDatabase;
  private tasks?: TaskRegistry;
  private sql?: ReturnType<typeof metricsSql>;
  private unlisten?: () => void;

  constructor(
    @Inject(JOBS_METRICS_OPTIONS) options: JobsMetricsModuleOptions,
    @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
    // Typed `object`, not prom-client's module: the declarations must not name prom-client.
    @Inject(PROM_CLIENT) promClient: object,
  ) {
    const { Counter, Gauge, Histogram, Registry } = promClient as typeof import('prom-client');
    const registry = (options.registry as Registry | undefined) ?? new Registry();
    this.registry = registry;
    const prefix = options.prefix ?? DEFAULT_PREFIX;
    const registers = [registry];
    this.added = new Counter({
      name: `${prefix}added_total`,
      help: 'Jobs enqueued by this instance.',
      labelNames: ['task', 'queue'],
      registers,
    });
    this.completed = new Counter({
      name: `${prefix}completed_total`,
      help: 'Job attempts this instance completed.',
      labelNames: ['task', 'queue'],
      registers,
    });
    this.failed = new Counter({
      name: `${prefix}failed_total`,
      help: 'Job attempts that failed on this instance; final="true" when no retry was left.',
      labelNames: ['task', 'queue', 'final'],
      registers,
    });
    this.skipped = new Counter({
      name: `${prefix}skipped_total`,
      help: "Cron jobs this instance's claims skipped: missed their slot's missedSlotGrace, or overlapped a run (overlap: 'skip').",
      labelNames: ['task', 'queue'],
      registers,
    });
    this.cancelled = new Counter({
      name: `${prefix}cancelled_total`,
      help: 'Jobs this instance cancelled, queued or running (cancelJob, cancelJobs).',
      labelNames: ['task', 'queue'],
      registers,
    });
    this.retried = new Counter({
      name: `${prefix}retried_total`,
      help: 'Jobs that had ended for good and that this instance queued again (retryJobs, the dashboard).',
      labelNames: ['task', 'queue'],
      registers,
    });
    this.snoozed = new Counter({
      name: `${prefix}snoozed_total`,
      help: 'Job attempts on this instance whose task snoozed the job (ctx.snooze): requeued, no retry used.',
      labelNames: ['task', 'queue'],
      registers,
    });
    this.gaveUp = new Counter({
      name: `${prefix}gave_up_total`,
      help: 'Jobs whose task gave up on this instance (UnrecoverableJobError, or backoff answered giveUp) with retries left.',
      labelNames: ['task', 'queue'],
      registers,
    });
    this.duration = new Histogram({
      name: `${prefix}duration_seconds`,
      help: 'Run time of the job attempts this instance ended.',
      labelNames: ['task', 'queue', 'outcome'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    new Gauge({
      name: `${prefix}queue_depth`,
      help: 'Jobs waiting in the queue (due or not; blocked flow jobs are in blocked), across all instances.',
      labelNames: ['task', 'queue'],
      registers,
      collect: this.collector(() => this.sql?.queueDepth),
    });
    new Gauge({
      name: `${prefix}blocked`,
      help: 'Flow jobs waiting in the queue for their dependencies to end (not in queue_depth), across all instances.',
      labelNames: ['task', 'queue'],
      registers,
      collect: this.collector(() => this.sql?.blocked),
    });
    new Gauge({
      name: `${prefix}active`,
      help: 'Jobs running now, across all instances.',
      labelNames: ['task', 'queue'],
      registers,
      collect: this.collector(() => this.sql?.active),
    });
  }

  onModuleInit(): void {
    this.db = findInApp(this.moduleRef, JobsDatabase, 'JobsMetricsModule');
    this.tasks = findInApp(this.moduleRef, TaskRegistry, 'JobsMetricsModule');
    this.sql = metricsSql(this.db.schema);
    const events = findInApp<JobEventEmitter>(this.moduleRef, JobEventEmitter, 'JobsMetricsModule');
    this.unlisten = events.listen((event) => this.count(event));
  }

  onModuleDestroy(): void {
    this.unlisten?.();
  }

  /** The metrics in Prometheus' text format. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * A gauge's `collect`: replaces its values with the query's, with a zero for every task this
   * instance runs that has none. When the database cannot answer, the scrape still succeeds: the
   * gauge keeps its last values and the counters are current.
   */
  private collector(statement: () => string | undefined) {
    const logger = this.logger;
    const read = (text: string) => this.db!.query<{ task: string; queue: string; n: number }>(text);
    const tasks = () => this.tasks!;
    return async function (this: Gauge<'task' | 'queue'>): Promise<void> {
      const text = statement();
      if (!text) return;
      let rows: { task: string; queue: string; n: number }[];
      try {
        rows = await read(text);
      } catch (err) {
        logger.warn(`Reading queue gauges failed: ${toError(err).message}`);
        return;
      }
      // Every task this instance runs gets a line, and each task's jobs are counted under the queue
      // they will run in (see TaskRegistry.pendingQueueOf): rows of one task enqueued under two
      // queues add up.
      const counts = new Map<string, { task: string; queue: string; n: number }>();
      const add = (task: string, queue: string, n: number) => {
        const key = JSON.stringify([task, queue]);
        counts.set(key, { task, queue, n: (counts.get(key)?.n ?? 0) + n });
      };
      for (const task of tasks().names) add(task, tasks().queueOf(task)!, 0);
      for (const row of rows) add(row.task, tasks().pendingQueueOf(row.task, row.queue), row.n);
      this.reset();
      for (const { task, queue, n } of counts.values()) this.set({ task, queue }, n);
    };
  }

  private count(event: JobEvent): void {
    const labels = { task: event.task, queue: event.queue };
    switch (event.type) {
      case 'added':
        this.added.inc(labels);
        break;
      case 'completed':
        this.completed.inc(labels);
        this.duration.observe({ ...labels, outcome: 'completed' }, event.durationMs / 1000);
        break;
      case 'failed':
        this.failed.inc({ ...labels, final: String(!event.willRetry) });
        if (event.gaveUp) this.gaveUp.inc(labels);
        this.duration.observe({ ...labels, outcome: 'failed' }, event.durationMs / 1000);
        break;
      case 'snoozed':
        this.snoozed.inc(labels);
        this.duration.observe({ ...labels, outcome: 'snoozed' }, event.durationMs / 1000);
        break;
      case 'skipped':
        this.skipped.inc(labels);
        break;
      case 'cancelled':
        this.cancelled.inc(labels);
        break;
      case 'retried':
        this.retried.inc(labels);
        break;
    }
  }
}

/** @deprecated Renamed {@link JobsMetricsService}, like the other injectable services. Same class, same token. */
export const JobsMetrics = JobsMetricsService;
/** @deprecated Renamed {@link JobsMetricsService}. */
export type JobsMetrics = JobsMetricsService;
