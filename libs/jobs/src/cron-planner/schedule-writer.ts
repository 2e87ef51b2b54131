import type { Logger } from '@nestjs/common';
import type { JobsDatabase } from '../database/jobs-database.js';
import type { TaskRegistry } from '../discovery/task-registry.js';
import { InvalidPayloadError, UnknownTaskError } from '../errors/jobs.errors.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import type { ValidatedSchedule } from '../cron-schedule/validate-schedule.js';
import type { StandardSchemaV1 } from '../task-schemas/standard-schema.js';
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

  /**
   * Throws `UnknownTaskError` for a task this instance does not know (unless allowed), and
   * `InvalidPayloadError` for a payload its task's `payloadSchema` refuses; warns of a short grace.
   */
  async check(schedule: ValidatedSchedule): Promise<void> {
    const task = this.registry.get(schedule.task);
    if (!this.options.allowUnknownTasks && task === undefined) {
      throw new UnknownTaskError(schedule.task, this.registry.names);
    }
    await this.checkPayload(schedule, task?.options.payloadSchema);
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
   * Every job of the schedule carries this payload, so a payload the schema refuses would fail each
   * of them at run, with no retry: it is refused before it is stored. What is checked is the stored
   * JSON, parsed, which is what each run parses again. Only a schema this thread holds can check it:
   * an in-process task's; a worker task's schemas live in its pool threads (the main thread knows
   * the task by name only), and a task of another instance is not known here at all, so those
   * payloads are checked at run.
   */
  private async checkPayload(
    schedule: ValidatedSchedule,
    payloadSchema: StandardSchemaV1 | undefined,
  ): Promise<void> {
    if (!payloadSchema) return;
    const checked = await payloadSchema['~standard'].validate(JSON.parse(schedule.payload));
    if (!checked.issues) return;
    throw new InvalidPayloadError({
      task: schedule.task,
      issues: checked.issues,
      schedule: schedule.name,
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
