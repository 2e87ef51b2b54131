import type { Logger } from '@nestjs/common';
import type { JobsDatabase } from '../database/jobs-database.js';
import type { TaskRegistry } from '../discovery/task-registry.js';
import { UnknownTaskError } from '../errors/jobs.errors.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import type { ValidatedSchedule } from '../cron-schedule/validate-schedule.js';
import type { CronSql } from './cron-planner.sql.js';

/**
 * The writes of a schedule row, and the checks a schedule passes before one: shared by the public
 * calls (`setSchedule`, `removeSchedule`) and the boot's sync of the static schedules.
 */
export class ScheduleWriter {
  constructor(
    private readonly options: ResolvedJobsOptions,
    private readonly db: JobsDatabase,
    private readonly registry: TaskRegistry,
    private readonly sql: CronSql,
    private readonly logger: Logger,
  ) {}

  /** Throws `UnknownTaskError` for a task this instance does not know (unless allowed), warns of a short grace. */
  check(schedule: ValidatedSchedule): void {
    if (!this.options.allowUnknownTasks && this.registry.get(schedule.task) === undefined) {
      throw new UnknownTaskError(schedule.task, this.registry.names);
    }
    this.warnIfGraceWithinPolling(schedule);
  }

  /**
   * The upsert locks the schedule row; the removal of planned jobs then runs as a statement of its
   * own, so it sees the jobs of a planner that held the lock before us (see `planSlots`).
   */
  async write(schedule: ValidatedSchedule): Promise<void> {
    await this.db.transaction(async (client) => {
      const { rows } = await client.query<{ changed: boolean }>(this.sql.upsertSchedule, [
        schedule.name,
        schedule.task,
        schedule.cron,
        schedule.timezone,
        schedule.payload,
        schedule.missedSlots,
        schedule.source,
        schedule.missedSlotGrace,
        schedule.overlap,
      ]);
      if (rows[0].changed) await client.query(this.sql.removeUnstartedPlannedJobs, [schedule.name]);
    });
  }

  /** Removes a schedule and its planned jobs that have not started; `false` if there was none. */
  async remove(name: string): Promise<boolean> {
    return this.db.transaction(async (client) => {
      const { rows } = await client.query(this.sql.deleteSchedule, [name]);
      if (rows.length === 0) return false;
      await client.query(this.sql.removeUnstartedPlannedJobs, [name]);
      return true;
    });
  }

  /**
   * A warning, not an error: which instances claim a schedule's jobs, and how often they poll, is
   * not this instance's to know. The module's own grace is checked against `pollingCheck` at boot.
   */
  private warnIfGraceWithinPolling(schedule: ValidatedSchedule): void {
    if (!this.options.runJobs || schedule.missedSlotGrace > this.options.pollingCheck) return;
    this.logger.warn(
      `Schedule "${schedule.name}" has missedSlotGrace ${schedule.missedSlotGrace}s, not longer than this ` +
        `instance's pollingCheck (${this.options.pollingCheck}s): a slot that falls due just after a poll ` +
        'waits for the next one and is skipped as missed.',
    );
  }
}
