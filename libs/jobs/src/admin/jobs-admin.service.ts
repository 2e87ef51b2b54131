import { ConflictException, Inject, Injectable, NotFoundException } from '@nestjs/common';
import type { OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { findInApp } from '../common/find-in-app.js';
import { isQueuedState } from '../common/job-states.js';
import type { AttemptOutcome } from '../common/recorded-attempt.js';
import { CronPlannerService } from '../cron-planner/cron-planner.service.js';
import type { ScheduleInfo } from '../cron-schedule/cron-schedule.interface.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { UnknownScheduleError } from '../errors/jobs.errors.js';
import type {
  CancelJobsFilter,
  DeleteJobsFilter,
  RetryJobsFilter,
} from '../job-queue/job-filter.interface.js';
import { TaskRegistry } from '../discovery/task-registry.js';
import type { JobInfo, JobState } from '../job-queue/job-info.interface.js';
import type { QueueInfo } from '../queue-state/queue-info.interface.js';
import { JobQueueService } from '../job-queue/job-queue.service.js';
import { DEFAULT_STATS_MINUTES } from './admin-input.js';
import { encodeCursor } from './admin-input.js';
import type {
  FlowListQuery,
  JobCountQuery,
  JobListCursor,
  JobListQuery,
  JobSearch,
} from './admin-input.js';
import { errorPattern, filterValues } from '../job-queue/job-filter.sql.js';
import { AdminFlows } from './admin-flows.js';
import {
  AdminMinuteStats,
  DURATIONS_FROM_HISTORY_MAX_MINUTES,
  taskDurations,
} from './admin-minute-stats.js';
import type { QueueDepthReport, TaskDurationsReport } from './admin-minute-stats.js';
import { minuteStatsSql } from '../minute-stats/minute-stats.sql.js';
import type { FlowInfo } from '../job-queue/flow-options.interface.js';
import type { FlowProgress, ListedFlowInfo } from './flow-progress.js';
import { adminSql } from './admin.sql.js';
import type { AdminSql } from './admin.sql.js';
import { boundPreview } from './list-previews.js';
import { listTasks } from './task-list.js';
import type { TaskInfo } from './task-list.js';

/** One task's line of `stats()`. */
export interface TaskStats {
  task: string;
  /** Queued, due or not (a job waiting out a retry backoff counts); not blocked. */
  pending: number;
  /** Queued in a flow and waiting for its dependencies to end (`blocked`). */
  blocked: number;
  /** Queued and due now. */
  due: number;
  active: number;
  /** Ended so, in the window of `stats(minutes)`. */
  completed: number;
  /** Failed for good in the window (a failed attempt that will be retried is pending). */
  failed: number;
  /** Interrupted for good in the window. */
  interrupted: number;
  /** Cancelled in the window. */
  cancelled: number;
  /**
   * Cron jobs that never ran: they missed their slot's grace, or their `overlap: 'skip'` schedule
   * had a run active.
   */
  skipped: number;
  /** Queued again by a snooze (`ctx.snooze`) and waiting it out now: a part of `pending`. */
  snoozed: number;
  /** Seconds the longest-waiting due job has been due; `null` when none is. */
  oldestPendingAgeSeconds: number | null;
}

/**
 * A job as the admin API lists it: with previews of its payload, its last error, its result and
 * its progress, which may each be large (`getJob`, the job's own view, has them whole), and with
 * its snoozes. A preview is the value's text cut to 200 characters and to 300 bytes as JSON, then
 * ending with `…`; so a page of 200 jobs stays small whatever the jobs carry.
 *
 * @publicApi
 */
export interface ListedJobInfo extends Omit<
  JobInfo,
  'result' | 'payload' | 'lastErrorMessage' | 'progress' | 'steps' | 'waitingFor'
> {
  /** The payload's JSON text, cut; `…` alone for a payload stored in more than 2 kB, which a list does not read. */
  payloadPreview: string;
  /** The error of the last failed attempt, cut; `null` when there is none. */
  lastErrorPreview: string | null;
  /**
   * The result's JSON text, cut; `…` alone for a result stored in more than 8 kB, which a list
   * does not read; `null` when there is none.
   */
  resultPreview: string | null;
  /**
   * The last progress reported (`ctx.reportProgress`), as JSON text, cut (a number's is whole,
   * `40`); `…` alone for a progress stored in more than 8 kB, which a list does not read; `null`
   * when none was.
   */
  progressPreview: string | null;
  /** When a pending job waiting out a snooze (`ctx.snooze`) is due again; `null` otherwise. */
  snoozedUntil: Date | null;
  /** How many times the job's attempts snoozed, over its whole life. */
  snoozes: number;
}

/**
 * An attempt of a job that ended without completing, as the job's page lists it (`GET
 * api/jobs/:id`): a job's history row holds only its last attempt, which the next claim
 * overwrites, so each such attempt is kept apart when it ends, a failure's with its stack. A
 * completed or running attempt is never kept here: it is the job's last, and its history row says
 * it (the page lists it after these).
 *
 * @publicApi
 */
export interface AttemptInfo {
  /**
   * Its number: an `interrupted` or `snoozed` attempt does not consume it, so the attempt after it
   * has the same one (a retry after a failure has the next).
   */
  attempt: number;
  /** How it ended. */
  outcome: AttemptOutcome;
  /** The instance that ran it. */
  executedBy: string | null;
  /** When it was claimed: the attempts of a job are listed in this order. */
  startedAt: Date;
  endedAt: Date;
  /**
   * A failure's error, or why it was interrupted (the reaper's, or shutdown's, message); `null` for a
   * snoozed or cancelled attempt.
   */
  error: string | null;
  /** The error's stack, cut to 8 kB; `null` when the error had none, and for other outcomes. */
  stack: string | null;
}

/**
 * The name `AttemptInfo` had when only failures were kept.
 *
 * @deprecated Use `AttemptInfo`: the attempt log keeps interrupted, snoozed and cancelled
 * attempts too, each with its `outcome`.
 * @publicApi
 */
export type FailedAttemptInfo = AttemptInfo;

/**
 * A task's line of `GET api/durations`: its jobs that ended in the window, and how long the
 * completed ones took.
 *
 * @publicApi
 */
export interface TaskDurations {
  task: string;
  completed: number;
  /**
   * Whose last attempt failed in the window (one that waits for its retry included, until the
   * retry starts).
   */
  failed: number;
  /** `failed / (completed + failed)`, from 0 to 1. */
  failureRate: number;
  /** From start to end of the completed ones, in ms; `null` when none completed. */
  durationMs: { p50: number; p95: number; p99: number } | null;
}

/**
 * A slot of a schedule that has come, as `GET api/schedules` lists it (`ListedScheduleInfo.lastRuns`).
 *
 * @publicApi
 */
export interface ScheduleRunInfo {
  /** When the slot's job was due (a run asked for now, `triggerSchedule`: when it was asked). */
  slot: Date;
  /** The job planned for the slot (`GET api/jobs/:id` shows it). */
  jobId: string;
  /**
   * Its job's state now: queued (`pending`, or `suspended` while it waits durably), `active`, or
   * how it ended. `skipped` is a slot that did not run: missed (its job had not started within
   * the schedule's `missedSlotGrace`), or its `overlap: 'skip'` schedule had a run active.
   * `null` once the job's record is gone (deleted).
   */
  state: JobState | null;
}

/**
 * A schedule as the admin API lists it (`GET api/schedules`): `CronPlannerService.listSchedules()`'s
 * row with its next slots and its latest ones.
 *
 * @publicApi
 */
export interface ListedScheduleInfo extends ScheduleInfo {
  /**
   * Its next 3 slots (`CronPlannerService.nextRuns`); none while it is paused, nor for a one-off
   * schedule whose time has passed.
   */
  nextRuns: Date[];
  /**
   * Its latest 5 slots at or before now, latest first, with their jobs' states. A slot's row is
   * kept as long as history keeps jobs (`historyExpiration`, an hour at least), so older slots
   * are not listed.
   */
  lastRuns: ScheduleRunInfo[];
}

/**
 * The cron slot a job was planned for, on its page (`GET api/jobs/:id`, `cronSlot`).
 *
 * @publicApi
 */
export interface CronSlotInfo {
  /** The schedule's name. */
  schedule: string;
  /** When the job was due (a run asked for now, `triggerSchedule`: when it was asked). */
  slot: Date;
}

/** How many next and last slots `GET api/schedules` gives of each schedule. */
const NEXT_RUNS = 3;
const LAST_RUNS = 5;

/**
 * A registered instance, as the dashboard shows it (`GET api/instances`).
 *
 * @publicApi
 */
export interface InstanceInfo {
  /** Its `instanceId`. */
  id: string;
  hostname: string | null;
  pid: number | null;
  /** When this life of it registered. */
  startedAt: Date;
  heartbeatAt: Date;
  /** Whether its last heartbeat is within its own `instanceTimeout`. */
  alive: boolean;
  silentForSeconds: number;
  /**
   * How many jobs it runs at once (its `concurrency`; 0 with `runJobs: false`), `null` for an
   * instance of a version before it was recorded.
   */
  concurrency: number | null;
  /** How many attempts it runs now. */
  running: number;
  /** The first 20 of them, oldest first. */
  jobs: { id: string; task: string; startedAt: string }[];
}

/**
 * A listed row carries the key it was sorted by and whether it is in a flow (its `flowId` says
 * which), which the API leaves out.
 */
type ListedJob = ListedJobInfo & {
  sortAt?: Date;
  inFlow?: boolean | null;
  /** The sort key as the database writes it (a Date would lose its microseconds). */
  cursorAt: string;
  cursorWaitUntil?: string;
  cursorSeq?: string;
};

/** The most a count goes to: past it, a count would read a big history for a number nobody needs. */
export const COUNT_CAP = 10_000;

/** The search's values, `$1` to `$10` of every list and count (see `adminSql`). */
function searchValues(search: JobSearch): unknown[] {
  const { task, queue, groupKey, uniqueKey, error, after, before, idPrefix, flowId } = search;
  const filter = filterValues({
    task,
    queue,
    groupKey,
    uniqueKey,
    createdAfter: after,
    createdBefore: before,
    errorPattern: error === null ? null : errorPattern(error),
  });
  // A prefix is a range of ids: its first and last, the rest of their hex digits 0 and f.
  const hex = idPrefix?.replaceAll('-', '');
  const idRange =
    hex === undefined ? [null, null] : [asUuid(hex.padEnd(32, '0')), asUuid(hex.padEnd(32, 'f'))];
  return [...filter, ...idRange, flowId];
}

function asUuid(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Where the page after `last` starts, in the order of the list of `state`. */
function cursorAfter(last: ListedJob, state: JobState | undefined): JobListCursor {
  return state !== undefined && isQueuedState(state)
    ? { priority: last.priority, waitUntil: last.cursorWaitUntil!, seq: last.cursorSeq! }
    : { at: last.cursorAt, id: last.id };
}

const COUNTS = [
  'pending',
  'blocked',
  'due',
  'active',
  'completed',
  'failed',
  'interrupted',
  'cancelled',
  'skipped',
  'snoozed',
] as const;

/**
 * What the admin API and the dashboard read and do. Counts of ended jobs cover the history that
 * retention (`historyExpiration`) has kept.
 *
 * @publicApi
 */
@Injectable()
export class JobsAdminService implements OnModuleInit {
  private db!: JobsDatabase;
  private queue!: JobQueueService;
  private planner!: CronPlannerService;
  private tasks!: TaskRegistry;
  private sql!: AdminSql;
  private flows!: AdminFlows;
  private minuteStats!: AdminMinuteStats;

  constructor(@Inject(ModuleRef) private readonly moduleRef: ModuleRef) {}

  onModuleInit(): void {
    this.db = findInApp(this.moduleRef, JobsDatabase, 'JobsAdminModule');
    this.queue = findInApp(this.moduleRef, JobQueueService, 'JobsAdminModule');
    this.planner = findInApp(this.moduleRef, CronPlannerService, 'JobsAdminModule');
    this.tasks = findInApp(this.moduleRef, TaskRegistry, 'JobsAdminModule');
    this.sql = adminSql(this.db.schema);
    this.flows = new AdminFlows(this.db, this.sql, this.queue);
    this.minuteStats = new AdminMinuteStats(minuteStatsSql(this.db.schema), (text, values) =>
      this.read(text, values),
    );
  }

  /**
   * A page of the jobs matching the search, in the list's order (claim order for a queued state,
   * latest first otherwise); `next` is the cursor of the page after it, `null` on the last one.
   */
  async listJobs(
    query: JobListQuery,
  ): Promise<{ jobs: ListedJobInfo[]; hasMore: boolean; next: string | null }> {
    const { state, limit, offset, cursor } = query;
    const { list, stateValues } = this.statementsOf(state);
    // One row more than asked tells whether there is a next page without counting the table.
    const page = [limit + 1, offset];
    const after =
      state !== undefined && isQueuedState(state)
        ? cursor && 'seq' in cursor
          ? [cursor.priority, cursor.waitUntil, cursor.seq]
          : [null, null, null]
        : cursor && 'at' in cursor
          ? [cursor.at, cursor.id]
          : [null, null];
    const rows = await this.read<ListedJob>(list, [
      ...searchValues(query.search),
      ...stateValues,
      ...page,
      ...after,
    ]);
    const listed = rows.slice(0, limit);
    const last = listed.at(-1);
    const jobs = listed.map(
      ({
        sortAt: _sortAt,
        cursorAt: _cursorAt,
        cursorWaitUntil: _cursorWaitUntil,
        cursorSeq: _cursorSeq,
        inFlow: _inFlow,
        ...job
      }) => ({
        ...job,
        payloadPreview: boundPreview(job.payloadPreview)!,
        lastErrorPreview: boundPreview(job.lastErrorPreview),
        resultPreview: boundPreview(job.resultPreview),
        progressPreview: boundPreview(job.progressPreview),
        ...(isQueuedState(job.state) && {
          queue: this.tasks.pendingQueueOf(job.task, job.queue),
        }),
      }),
    );
    const hasMore = rows.length > limit;
    return { jobs, hasMore, next: hasMore && last ? encodeCursor(cursorAfter(last, state)) : null };
  }

  /**
   * How many jobs match the search, counted up to 10,000 (`capped` when there are more): what a
   * bulk retry, cancel or delete of the same filter takes (a delete leaves a flow's jobs), without
   * reading the whole history to say so.
   */
  async countJobs(query: JobCountQuery): Promise<{ count: number; capped: boolean }> {
    const { count: statement, stateValues } = this.statementsOf(query.state);
    const [{ count }] = await this.read<{ count: number }>(statement, [
      ...searchValues(query.search),
      ...stateValues,
      COUNT_CAP + 1,
    ]);
    return { count: Math.min(count, COUNT_CAP), capped: count > COUNT_CAP };
  }

  /**
   * The job, its history row (the record of its last attempt), the attempts before it that
   * ended without completing (`AttemptInfo`: failed, interrupted, snoozed, cancelled, a failure's
   * with its error's stack), and the cron slot it was planned for (`null` for a job that is not a
   * schedule's).
   */
  async getJob(id: string): Promise<{
    job: JobInfo;
    history: Record<string, unknown> | null;
    attempts: AttemptInfo[];
    cronSlot: CronSlotInfo | null;
  }> {
    const job = await this.queue.getJob(id);
    if (!job) throw new NotFoundException(`No job ${id}.`);
    const [[history], attempts, [cronSlot]] = await Promise.all([
      this.db.query<Record<string, unknown>>(this.sql.history, [id]),
      this.db.query<AttemptInfo>(this.sql.attempts, [id]),
      this.db.query<CronSlotInfo>(this.sql.cronSlot, [id]),
    ]);
    return { job, history: history ?? null, attempts, cronSlot: cronSlot ?? null };
  }

  /**
   * Queues a job that ended for good (failed, interrupted or cancelled) for one more attempt, now
   * (`JobQueueService.retryJobs` explains what a retry does).
   */
  async retryJob(id: string): Promise<{ job: JobInfo }> {
    if (!(await this.queue.retryJob(id))) {
      await this.refuse(id, 'retried', 'only a job that failed, was interrupted or was cancelled');
    }
    return { job: (await this.queue.getJob(id))! };
  }

  /** Cancels a pending or running job (`JobQueueService.cancelJob`). */
  async cancelJob(id: string): Promise<{ job: JobInfo }> {
    if (!(await this.queue.cancelJob(id))) {
      await this.refuse(id, 'cancelled', 'only a pending or running job');
    }
    return { job: (await this.queue.getJob(id))! };
  }

  /** Makes a pending job that waits for its time due now (`JobQueueService.runJobNow`). */
  async runJobNow(id: string): Promise<{ job: JobInfo }> {
    if (!(await this.queue.runJobNow(id))) {
      await this.refuse(id, 'run now', 'only a pending job that is not due yet');
    }
    return { job: (await this.queue.getJob(id))! };
  }

  /** `JobQueueService.retryJobs`: how many jobs were queued again. */
  async retryJobs(filter: RetryJobsFilter): Promise<{ retried: number }> {
    return { retried: await this.queue.retryJobs(filter) };
  }

  /** `JobQueueService.cancelJobs`: how many jobs were cancelled. */
  async cancelJobs(filter: CancelJobsFilter): Promise<{ cancelled: number }> {
    return { cancelled: await this.queue.cancelJobs(filter) };
  }

  /** `JobQueueService.deleteJobs`: how many ended jobs' records were deleted. */
  async deleteJobs(filter: DeleteJobsFilter): Promise<{ deleted: number }> {
    return { deleted: await this.queue.deleteJobs(filter) };
  }

  /**
   * Counts per task. `completed`, `failed`, `interrupted` and `cancelled` count the jobs that
   * ended in the last `minutes` (default 60), so that the page's poll never counts the whole
   * history; `pending`, `blocked`, `due`, `snoozed` and `active` are counts of now.
   */
  async stats(
    minutes = DEFAULT_STATS_MINUTES,
  ): Promise<{ minutes: number; tasks: TaskStats[]; totals: Omit<TaskStats, 'task'> }> {
    const tasks = await this.read<TaskStats>(this.sql.stats, [minutes]);
    const totals: Omit<TaskStats, 'task'> = {
      pending: 0,
      blocked: 0,
      due: 0,
      active: 0,
      completed: 0,
      failed: 0,
      interrupted: 0,
      cancelled: 0,
      skipped: 0,
      snoozed: 0,
      oldestPendingAgeSeconds: null,
    };
    for (const line of tasks) {
      for (const key of COUNTS) totals[key] += line[key];
      if (line.oldestPendingAgeSeconds !== null) {
        totals.oldestPendingAgeSeconds = Math.max(
          totals.oldestPendingAgeSeconds ?? 0,
          line.oldestPendingAgeSeconds,
        );
      }
    }
    return { minutes, tasks, totals };
  }

  /** Flows, latest first, each with its jobs counted by state and where it is (`FlowState`). */
  listFlows(query: FlowListQuery): Promise<{ flows: ListedFlowInfo[]; hasMore: boolean }> {
    return this.flows.list(query);
  }

  /** A flow, its jobs with their dependencies and states (`JobQueueService.getFlow`), counted. */
  getFlow(flowId: string): Promise<{ flow: FlowInfo & FlowProgress }> {
    return this.flows.get(flowId);
  }

  /** `JobQueueService.cancelFlow`: how many of the flow's jobs were cancelled. */
  cancelFlow(flowId: string): Promise<{ cancelled: number }> {
    return this.flows.cancel(flowId);
  }

  /** `JobQueueService.retryFlow`: how many of the flow's jobs were queued again. */
  retryFlow(flowId: string): Promise<{ retried: number }> {
    return this.flows.retry(flowId);
  }

  /**
   * Per task, over the jobs that ended in the last `minutes`: completed and failed counts, the
   * failure rate, and the completed jobs' durations (p50, p95, p99). Up to
   * `DURATIONS_FROM_HISTORY_MAX_MINUTES` (60) from history, exact; a longer window from the
   * per-minute rows, with history for the minutes not written yet, its percentiles from buckets
   * (`percentiles: 'buckets'`, within 9.5 %).
   */
  async durations(minutes: number): Promise<TaskDurationsReport> {
    if (minutes > DURATIONS_FROM_HISTORY_MAX_MINUTES) return this.minuteStats.durations(minutes);
    const rows = await this.read<{
      task: string;
      completed: number;
      failed: number;
      durationsMs: number[] | null;
    }>(this.sql.durations, [minutes]);
    const tasks = rows.map(({ task, completed, failed, durationsMs }) =>
      taskDurations(task, completed, failed, durationsMs),
    );
    return { minutes, percentiles: 'exact', tasks };
  }

  /**
   * Queue `queue`'s depth (pending, blocked, due, active) at the end of each minute of the last
   * `minutes` that an instance wrote (see `MinuteStatsRecorder`), oldest first.
   */
  queueDepth(queue: string, minutes: number): Promise<QueueDepthReport> {
    return this.minuteStats.depth(queue, minutes);
  }

  async throughput(
    minutes: number,
  ): Promise<{ minutes: { minute: Date; completed: number; failed: number }[] }> {
    return {
      minutes: await this.read<{ minute: Date; completed: number; failed: number }>(
        this.sql.throughput,
        [minutes],
      ),
    };
  }

  /**
   * The tasks this instance runs, with the JSON Schema of each one's payload where its
   * `payloadSchema` provides one.
   */
  listTasks(): { tasks: TaskInfo[] } {
    return { tasks: listTasks(this.tasks) };
  }

  /**
   * Every stored schedule (`CronPlannerService.listSchedules()`), each with its next 3 slots and
   * its latest 5 that have come, with how their jobs are: two statements for every schedule at
   * once, run side by side, however many schedules there are.
   */
  async schedules(): Promise<{ schedules: ListedScheduleInfo[] }> {
    const [schedules, runs] = await Promise.all([
      this.planner.listSchedulesWithNextRuns(NEXT_RUNS),
      this.db.query<ScheduleRunInfo & { schedule: string }>(this.sql.lastRuns, [LAST_RUNS]),
    ]);
    const lastRuns = new Map<string, ScheduleRunInfo[]>();
    for (const { schedule, ...run } of runs) {
      const listed = lastRuns.get(schedule);
      if (listed) listed.push(run);
      else lastRuns.set(schedule, [run]);
    }
    return {
      schedules: schedules.map((schedule) => ({
        ...schedule,
        lastRuns: lastRuns.get(schedule.name) ?? [],
      })),
    };
  }

  /** Pauses a schedule on every instance (see `CronPlannerService.pauseSchedule`). */
  async pauseSchedule(name: string): Promise<{ schedule: ScheduleInfo }> {
    await this.knownSchedule(() => this.planner.pauseSchedule(name));
    return { schedule: await this.schedule(name) };
  }

  /** Resumes a paused schedule from now on (see `CronPlannerService.resumeSchedule`). */
  async resumeSchedule(name: string): Promise<{ schedule: ScheduleInfo }> {
    await this.knownSchedule(() => this.planner.resumeSchedule(name));
    return { schedule: await this.schedule(name) };
  }

  /** Runs a schedule once, now (see `CronPlannerService.triggerSchedule`). */
  async triggerSchedule(name: string): Promise<{ job: JobInfo }> {
    const id = await this.knownSchedule(() => this.planner.triggerSchedule(name));
    return { job: (await this.queue.getJob(id))! };
  }

  private async knownSchedule<T>(action: () => Promise<T>): Promise<T> {
    try {
      return await action();
    } catch (err) {
      if (err instanceof UnknownScheduleError) throw new NotFoundException(err.message);
      throw err;
    }
  }

  private async schedule(name: string): Promise<ScheduleInfo> {
    const found = (await this.planner.listSchedules()).find((schedule) => schedule.name === name);
    if (!found) throw new NotFoundException(`No schedule is named ${JSON.stringify(name)}.`);
    return found;
  }

  /** The instances registered, each with its heartbeat and the jobs it runs now. */
  async instances(): Promise<{ instances: InstanceInfo[] }> {
    return { instances: await this.db.query<InstanceInfo>(this.sql.instances) };
  }

  /** Every queue with its state, counts and limits (`JobQueueService.getQueues()`). */
  async queues(): Promise<{ queues: QueueInfo[] }> {
    return { queues: await this.queue.getQueues() };
  }

  /** Pauses (`true`) or resumes a queue on every instance; returns the queues as they are then. */
  async setQueuePaused(name: string, paused: boolean): Promise<{ queues: QueueInfo[] }> {
    await (paused ? this.queue.pauseQueue(name) : this.queue.resumeQueue(name));
    return this.queues();
  }

  /**
   * The statements that list and count the jobs of `state` (every state when none), and the
   * state's value when they take it (`$10`, after the search): the queue's, the running
   * attempts' or history's, each read through its own index (see `adminSql`).
   */
  private statementsOf(state: JobState | undefined): {
    list: string;
    count: string;
    stateValues: JobState[];
  } {
    const { sql } = this;
    if (state === undefined) return { list: sql.listAll, count: sql.countAll, stateValues: [] };
    if (isQueuedState(state)) {
      return { list: sql.listPending, count: sql.countPending, stateValues: [state] };
    }
    if (state === 'active') {
      return { list: sql.listActive, count: sql.countActive, stateValues: [] };
    }
    return { list: sql.listEnded, count: sql.countEnded, stateValues: [state] };
  }

  /**
   * Runs one of the reads of a big history (lists, counts, stats) without JIT compilation: their
   * estimated costs on a large history pass `jit_above_cost`, and compiling took 1.5 s of a 1.5 s
   * search in `npm run bench:dashboard`, for plans that read a page. Off for that statement only
   * (`SET LOCAL`, in its own transaction), so the app's other statements keep the server's setting.
   */
  private read<Row>(text: string, values: unknown[]): Promise<Row[]> {
    return this.db.transaction(async (client) => {
      await client.query('SET LOCAL jit = off');
      return (await client.query(text, values)).rows as Row[];
    });
  }

  private async refuse(id: string, action: string, allowed: string): Promise<never> {
    const job = await this.queue.getJob(id);
    if (!job) throw new NotFoundException(`No job ${id}.`);
    throw new ConflictException(
      `Job ${id} is ${job.state} and cannot be ${action}: ${allowed} can.`,
    );
  }
}
