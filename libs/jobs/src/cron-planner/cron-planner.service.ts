import { Inject, Injectable, Logger } from '@nestjs/common';
import { newJobId } from '../common/job-id.js';
import { JobsDatabase } from '../database/jobs-database.js';
import { TaskRegistry } from '../discovery/task-registry.js';
import { InvalidScheduleError, JobsError, UnknownScheduleError } from '../errors/jobs.errors.js';
import { channelFor, NEW_JOB_NOTIFICATION } from '../notify/notification-protocol.js';
import { JOBS_OPTIONS } from '../options/resolved-options.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import type {
  CronScheduleOptions,
  ScheduleInfo,
} from '../cron-schedule/cron-schedule.interface.js';
import { validateSchedule } from '../cron-schedule/validate-schedule.js';
import { BackgroundPlanner } from './background-planner.js';
import { cronSql } from './cron-planner.sql.js';
import { PlanningRound } from './planning-round.js';
import { ScheduleWriter } from './schedule-writer.js';
import type { CronSql, ScheduleRow } from './cron-planner.sql.js';
import { expandSlots } from '../cron-schedule/slot-expansion.js';
import type { SlotSource } from '../cron-schedule/slot-expansion.js';

/** `nextRuns()` answers at most this many slots, found within this far ahead. */
const MAX_NEXT_RUNS = 1000;
const NEXT_RUNS_HORIZON_MS = 10 * 366 * 86_400_000;

/** The next `count` slots of `schedule` after `now`, within `NEXT_RUNS_HORIZON_MS` (`nextRuns`). */
const slotsAhead = (schedule: SlotSource, now: Date, count: number) =>
  expandSlots(schedule, now, new Date(now.getTime() + NEXT_RUNS_HORIZON_MS), count);

/**
 * Expands the stored cron schedules into future jobs, once across all instances.
 *
 * Every instance plans, at boot and on every `scheduledCheck`; what keeps a slot from being planned
 * twice is the database, not a lock: each planned job is inserted together with its
 * `(schedule, slot)` row, whose primary key turns a second planner's insert into a no-op, and that
 * row outlives the job's claim. The seed's `jobLock` row only spares the other instances a round
 * that one of them has just done. The clock is the database's, so instances whose clocks disagree
 * still plan the same slots. What runs on its own (the static schedules' sync at boot, the round on
 * every `scheduledCheck`) is `BackgroundPlanner`'s; this class is the schedules' public API.
 *
 * Schedules come from `JobsModule.forRoot({ schedules })`, `@JobTask({ cron })`, `@Cron()` methods
 * under `JobsScheduleModule` (all "static": written at boot) and `setSchedule()` /
 * `removeSchedule()` at run time. An instance owns the static schedules of the tasks it runs: at
 * boot it writes those it declares and removes the static schedules of those tasks that it no
 * longer declares. `pauseSchedule()`, `resumeSchedule()`, `triggerSchedule()` and `nextRuns()`
 * act on any stored schedule, static or not, from any instance.
 *
 * @publicApi
 */
@Injectable()
export class CronPlannerService {
  private readonly logger = new Logger('JobsCron');
  private readonly sql: CronSql;
  private readonly channel: string;
  private readonly round: PlanningRound;
  private readonly writer: ScheduleWriter;
  private readonly background: BackgroundPlanner;

  /** @internal Nest constructs it: its parameters are the module's internals. */
  constructor(
    @Inject(JOBS_OPTIONS) private readonly options: ResolvedJobsOptions,
    @Inject(JobsDatabase) private readonly db: JobsDatabase,
    @Inject(TaskRegistry) private readonly registry: TaskRegistry,
  ) {
    this.sql = cronSql(db.schema);
    this.channel = channelFor(db.schema);
    this.round = new PlanningRound(options, db, registry, this.sql, this.channel, this.logger);
    this.writer = new ScheduleWriter(options, db, registry, this.sql, this.logger);
    this.background = new BackgroundPlanner(
      options,
      db,
      registry,
      this.sql,
      this.writer,
      this.round,
      this.logger,
    );
  }

  /**
   * Plans every schedule's next slots (at most `maxPlannedSlots` each, within `scheduleHorizon`),
   * and the catch-up run of `runOnce` schedules that missed slots. Safe to call from any number
   * of instances at once. Returns how many jobs this call planned.
   */
  planSlots(): Promise<number> {
    return this.round.run();
  }

  /** @deprecated Renamed {@link CronPlannerService.planSlots}: it plans slots, it adds nothing else. */
  addScheduled(): Promise<number> {
    return this.planSlots();
  }

  /**
   * Creates or replaces a schedule (by name; the name defaults to the task). A changed schedule's
   * planned jobs that have not started are removed, and its slots are planned again at once under
   * the new definition. Throws `InvalidScheduleError` (or `InvalidCronExpressionError`,
   * `InvalidTimeZoneError`, `InvalidPayloadError`, `UnknownTaskError`) before writing anything:
   * `InvalidPayloadError` with the schema's `issues` also for a payload that the `payloadSchema` of
   * the task refuses, when the task runs in-process on this instance (a worker task's schemas live
   * in its pool threads: its schedule's payload is checked at run).
   */
  async setSchedule(schedule: CronScheduleOptions): Promise<void> {
    const validated = validateSchedule(schedule, 'dynamic', this.options.missedSlotGrace);
    await this.writer.check(validated);
    await this.writer.write(validated);
    await this.planSlots();
  }

  /** Removes a schedule and its planned jobs that have not started. Returns `false` if there was none. */
  async removeSchedule(name: string): Promise<boolean> {
    assertScheduleName(name);
    return this.writer.remove(name);
  }

  /**
   * Stops planning a schedule, on every instance, until `resumeSchedule()`: its planned jobs that
   * have not started are removed (a run in progress goes on). Durable: the schedule stays paused
   * across restarts and deploys, static ones included. Pausing a paused schedule changes nothing.
   * Throws `UnknownScheduleError` for a name with no schedule.
   */
  async pauseSchedule(name: string): Promise<void> {
    assertScheduleName(name);
    const paused = await this.db.transaction(async (client) => {
      const { rows } = await client.query(this.sql.pauseSchedule, [name]);
      if (rows.length > 0) await client.query(this.sql.removeUnstartedPlannedJobs, [name]);
      return rows.length > 0;
    });
    if (!paused) throw new UnknownScheduleError(name);
    this.logger.log(`Paused schedule "${name}".`);
  }

  /**
   * Plans a paused schedule again, from now on: the slots that fell during the pause are neither
   * run nor recorded as missed. Resuming a schedule that is not paused changes nothing. Throws
   * `UnknownScheduleError` for a name with no schedule.
   */
  async resumeSchedule(name: string): Promise<void> {
    assertScheduleName(name);
    const [{ found, resumed }] = await this.db.query<{ found: boolean; resumed: number }>(
      this.sql.resumeSchedule,
      [name],
    );
    if (!found) throw new UnknownScheduleError(name);
    if (resumed === 0) return;
    this.logger.log(`Resumed schedule "${name}".`);
    await this.planSlots();
  }

  /**
   * Runs a schedule once, now, on whichever instance claims it (paused or not), with its payload,
   * and returns the job's id. The run is one of the schedule's slots: under `overlap: 'skip'` it is
   * skipped while another run of the schedule is active, and it has the schedule's
   * `missedSlotGrace` to start. Throws `UnknownScheduleError` for a name with no schedule.
   */
  async triggerSchedule(name: string): Promise<string> {
    assertScheduleName(name);
    const [schedule] = await this.db.query<{ task: string }>(this.sql.scheduleTask, [name]);
    if (!schedule) throw new UnknownScheduleError(name);
    const [job] = await this.db.query<{ id: string }>(this.sql.triggerSchedule, [
      name,
      newJobId(),
      this.round.maxRetriesOf(schedule.task),
      this.options.instanceId,
      this.channel,
      NEW_JOB_NOTIFICATION,
      this.registry.queueForNewJob(schedule.task),
    ]);
    // Removed between the two statements.
    if (!job) throw new UnknownScheduleError(name);
    this.logger.log(`Triggered schedule "${name}": job ${job.id}.`);
    return job.id;
  }

  /**
   * The next `count` (default 1, at most 1000) slots of a schedule after the database's now, within
   * the next ten years: what it will run unless it is changed, or paused (a paused schedule's
   * slots are answered all the same; `listSchedules()` tells whether it is paused). A one-off
   * schedule has at most one. Throws `UnknownScheduleError` for a name with no schedule.
   */
  async nextRuns(name: string, count = 1): Promise<Date[]> {
    assertScheduleName(name);
    if (!Number.isSafeInteger(count) || count < 1 || count > MAX_NEXT_RUNS) {
      throw new JobsError(
        `nextRuns("${name}", count): "count" must be an integer from 1 to ${MAX_NEXT_RUNS}; got ${String(count)}.`,
      );
    }
    const [schedule] = await this.db.query<ScheduleRow & { now: Date }>(this.sql.scheduleWithNow, [
      name,
    ]);
    if (!schedule) throw new UnknownScheduleError(name);
    return slotsAhead(schedule, schedule.now, count);
  }

  /**
   * @internal Every stored schedule, by name (`listSchedules()`), each with its next `count` slots
   * (`nextRuns()`), none while it is paused: one statement however many schedules there are, for a
   * dashboard that asks every few seconds. The slots are all counted from one reading of the
   * database's clock.
   */
  async listSchedulesWithNextRuns(count: number): Promise<(ScheduleInfo & { nextRuns: Date[] })[]> {
    const rows = await this.db.query<ScheduleRow & { now: Date }>(this.sql.schedulesWithNow);
    // No schedule is one row of the clock alone, its schedule's columns NULL.
    return rows
      .filter((row) => row.name !== null)
      .map(({ now, version: _version, ...info }) => ({
        ...info,
        nextRuns: info.paused ? [] : slotsAhead(info, now, count),
      }));
  }

  /** Every stored schedule, by name. */
  async listSchedules(): Promise<ScheduleInfo[]> {
    const rows = await this.db.query<ScheduleRow>(this.sql.listSchedules);
    return rows.map(({ version: _version, ...info }) => info);
  }

  /** @internal Validates the static schedules once the handlers are discovered: a bad one fails the boot. */
  prepare(): Promise<void> {
    return this.background.prepare();
  }

  /**
   * @internal Writes the static schedules and plans once, then plans on every `scheduledCheck`
   * (where a failed boot round is retried).
   */
  start(): Promise<void> {
    return this.background.start();
  }

  /** @internal */
  stop(): Promise<void> {
    return this.background.stop();
  }
}

function assertScheduleName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new InvalidScheduleError(String(name), 'name', name, 'must be a schedule name');
  }
}
