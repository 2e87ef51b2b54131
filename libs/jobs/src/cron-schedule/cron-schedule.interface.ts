/**
 * What happens to a schedule's missed slots. A slot is missed when its job has not started within
 * `missedSlotGrace` seconds after its time: because every instance was down, because planning
 * stalled for longer than `maxPlannedSlots` slots (the slot was never planned), or because the
 * queue was too busy to reach it. Lateness is judged by the claim itself, against the database's
 * clock, so no missed slot starts, whichever instance claims it and however it got late.
 * - `'skip'` (default): missed slots do not run. A planned one is recorded in history as
 *   `skipped`; planning resumes with the next future slot.
 * - `'runOnce'`: of the missed slots, only the latest runs (at once); the older planned ones are
 *   recorded `skipped`. "Latest" is judged when a job is claimed: a missed slot runs unless a
 *   later slot of its schedule is missed too.
 *
 * @publicApi
 */
export type MissedSlotPolicy = 'skip' | 'runOnce';

/**
 * Whether a slot may start while an earlier run of its schedule is still active.
 * - `'allow'` (default): every slot starts, whatever is still running.
 * - `'skip'`: a slot whose schedule has a run active (on any instance) is not started but recorded
 *   `skipped`, with the reason; of several due slots (a backlog), only the latest may start. The
 *   claim judges it in the database, against the runs that had started when it began: two claims
 *   on two instances at the same instant can still both start a run, if a slot falls due between
 *   their starts while the earlier one is being claimed (a window of one claim's duration, only
 *   when a slot is claimed late). `@nestjs/schedule`'s `waitForCompletion` maps to it.
 *
 * @publicApi
 */
export type OverlapPolicy = 'allow' | 'skip';

/**
 * A cron schedule: `JobsModule.forRoot({ schedules })`, `CronPlannerService.setSchedule()`.
 *
 * Time zones and daylight saving (docs/cron.md, "Time zones and daylight saving", states the rules):
 * - a wall-clock time that does not exist (spring forward) runs once, shifted forward by the gap:
 *   `30 2 * * *` in `Europe/Berlin` runs at 03:30 CEST on the last Sunday of March;
 * - a wall-clock time that happens twice (fall back) runs once, at its first occurrence:
 *   `30 2 * * *` runs at 02:30 CEST, not again at 02:30 CET. An hour field that names every hour
 *   (`*`, `*\/1`) runs by elapsed time: `*\/30 * * * *` runs at 02:00 and 02:30 in both summer
 *   and winter time. Any other hour field, steps included, names fixed hours;
 * - `H` (hashed) fields are refused.
 *
 * @publicApi
 */
export interface CronScheduleOptions<Payload = unknown> {
  /** Unique name of the schedule. Default: the task name. */
  name?: string;
  /** The `@JobTask()` task each slot enqueues. */
  task: string;
  /**
   * 5 fields (`minute hour day-of-month month day-of-week`) or 6 with seconds first, or one of
   * cron-parser's `@daily`-style aliases. `@nestjs/schedule`'s `CronExpression` constants work as is.
   * A `Date` is a one-off slot at that instant (stored as its ISO string): it runs once, if it is
   * still in the future when the schedule is written.
   */
  cron: string | Date;
  /**
   * IANA time zone the expression is read in, or a fixed offset `UTC+05:30` / `UTC-03:00`.
   * Default `'UTC'` (never the process's zone).
   */
  timezone?: string;
  /** JSON payload of every job the schedule plans. Default `{}`. */
  payload?: Payload;
  /** Default `'skip'`. */
  missedSlots?: MissedSlotPolicy;
  /**
   * Seconds after its slot a job may still start; later, the slot is missed (see
   * `MissedSlotPolicy`). Default: the module's `missedSlotGrace` (60).
   */
  missedSlotGrace?: number;
  /** Default `'allow'`. */
  overlap?: OverlapPolicy;
}

/** Where a schedule came from: declared in code (module options, `@JobTask`) or set at run time. */
export type ScheduleSource = 'static' | 'dynamic';

/**
 * A stored schedule, as `CronPlannerService.listSchedules()` returns it.
 *
 * @publicApi
 */
export interface ScheduleInfo {
  readonly name: string;
  readonly task: string;
  /** The expression, or the ISO instant of a one-off schedule. */
  readonly cron: string;
  readonly timezone: string;
  readonly payload: unknown;
  readonly missedSlots: MissedSlotPolicy;
  /** Seconds; the module's `missedSlotGrace` when the schedule was written without one. */
  readonly missedSlotGrace: number;
  /** Whether a slot may start while a run of the schedule is active. */
  readonly overlap: OverlapPolicy;
  /** Paused by `CronPlannerService.pauseSchedule()`: not planned until resumed. */
  readonly paused: boolean;
  readonly source: ScheduleSource;
  /** The latest slot planned so far, or when the schedule was last set: later past slots were missed. */
  readonly plannedUntil: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}
