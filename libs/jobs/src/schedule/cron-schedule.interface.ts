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
 * A cron schedule: `JobsModule.forRoot({ schedules })`, `CronPlannerService.setSchedule()`.
 *
 * Time zones and daylight saving (the slots are cron-parser 5's, made independent of when the
 * planner happens to run):
 * - a wall-clock time that does not exist (spring forward) runs once, shifted forward by the gap:
 *   `30 2 * * *` in `Europe/Berlin` runs at 03:30 CEST on the last Sunday of March;
 * - a wall-clock time that happens twice (fall back) runs once, at its first occurrence, for
 *   expressions with fixed hours: `30 2 * * *` runs at 02:30 CEST, not again at 02:30 CET.
 *   Expressions whose hour field is `*` or a step keep their real-time rhythm: `*\/30 * * * *` runs
 *   at 02:00 and 02:30 in both summer and winter time.
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
   */
  cron: string;
  /** IANA time zone the expression is read in. Default `'UTC'` (never the process's zone). */
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
  readonly cron: string;
  readonly timezone: string;
  readonly payload: unknown;
  readonly missedSlots: MissedSlotPolicy;
  /** Seconds; the module's `missedSlotGrace` when the schedule was written without one. */
  readonly missedSlotGrace: number;
  readonly source: ScheduleSource;
  /** The latest slot planned so far, or when the schedule was last set: later past slots were missed. */
  readonly plannedUntil: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}
