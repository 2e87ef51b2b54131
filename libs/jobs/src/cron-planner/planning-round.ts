import type { Logger } from '@nestjs/common';
import { toError } from '../common/errors.js';
import { newJobId } from '../common/job-id.js';
import { expandSlots, latestSlotAtOrBefore } from '../cron-schedule/slot-expansion.js';
import type { JobsDatabase } from '../database/jobs-database.js';
import type { TaskRegistry } from '../discovery/task-registry.js';
import { NEW_JOB_NOTIFICATION } from '../notify/notification-protocol.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import type { CronSql, ScheduleRow } from './cron-planner.sql.js';

/**
 * How long a slot row outlives its slot (and its job's claim) at least. Planners only expand slots
 * after the database's now (read at the start of their round), so an hour is far more than any
 * round can lag.
 */
const MIN_SLOT_RETENTION_SECONDS = 3600;

/**
 * How long slot rows are kept after their slot: as long as history keeps jobs
 * (`historyExpiration`), at least the hour planning needs, and forever (`null`) when history is
 * kept forever (`historyExpiration: 0`). Longer than planning needs, because a slot row is also
 * the record of which job a slot planned: a job's page shows the slot it came from, and a
 * schedule's last runs (the admin API, the dashboard) show how each slot's job ended, for as long
 * as history shows that job.
 */
function slotRetentionSeconds(historyExpiration: number): number | null {
  return historyExpiration === 0 ? null : Math.max(MIN_SLOT_RETENTION_SECONDS, historyExpiration);
}

interface PlanningBatch {
  readonly schedule: string[];
  readonly version: number[];
  readonly slot: Date[];
  readonly jobId: string[];
  readonly maxRetries: number[];
  readonly queue: string[];
}

/**
 * One planning round (`CronPlannerService.planSlots`): every schedule's next slots within
 * `scheduleHorizon` (at most `maxPlannedSlots` each) and the catch-up of `runOnce` schedules that
 * missed slots, inserted in one statement with their slot rows, whose primary key makes a second
 * planner's insert a no-op; then the slot rows past their retention (`slotRetentionSeconds`) are
 * pruned.
 */
export class PlanningRound {
  constructor(
    private readonly options: ResolvedJobsOptions,
    private readonly db: JobsDatabase,
    private readonly registry: TaskRegistry,
    private readonly sql: CronSql,
    private readonly channel: string,
    private readonly logger: Logger,
  ) {}

  /** Runs the round; returns how many jobs it planned. */
  async run(): Promise<number> {
    const planned = await this.plan();
    const retention = slotRetentionSeconds(this.options.historyExpiration);
    if (retention !== null) await this.db.query(this.sql.pruneSlots, [retention]);
    return planned;
  }

  /** Retries of a planned job: its task's, else the module's. */
  maxRetriesOf(task: string): number {
    return this.registry.get(task)?.options.maxRetries ?? this.options.maxRetries;
  }

  private async plan(): Promise<number> {
    const rows = await this.db.query<ScheduleRow & { now: Date }>(this.sql.schedulesWithNow);
    const now = rows[0].now;
    const until = new Date(now.getTime() + this.options.scheduleHorizon * 1000);
    const batch: PlanningBatch = {
      schedule: [],
      version: [],
      slot: [],
      jobId: [],
      maxRetries: [],
      queue: [],
    };
    const skippedOnly: ScheduleRow[] = [];
    for (const schedule of rows) {
      if (schedule.name === null || schedule.paused) continue;
      let slots: Date[];
      let missed: Date | null;
      try {
        slots = expandSlots(schedule, now, until, this.options.maxPlannedSlots);
        missed = this.missedSlot(schedule, now);
      } catch (err) {
        // A row written by hand or by another version of the library: the others still get planned.
        this.logger.warn(`Schedule "${schedule.name}" cannot be expanded: ${toError(err).message}`);
        continue;
      }
      if (missed && schedule.missedSlots === 'runOnce') {
        this.logger.warn(
          `Schedule "${schedule.name}" missed slots; running once for ${missed.toISOString()}.`,
        );
        slots.unshift(missed);
      } else if (missed) {
        this.logger.warn(
          `Schedule "${schedule.name}" missed its slots up to ${missed.toISOString()}; skipped (missedSlots: 'skip').`,
        );
        if (slots.length === 0) skippedOnly.push(schedule);
      }
      const maxRetries = this.maxRetriesOf(schedule.task);
      const queue = this.registry.queueForNewJob(schedule.task);
      for (const slot of slots) {
        batch.schedule.push(schedule.name);
        batch.version.push(schedule.version);
        batch.slot.push(slot);
        batch.jobId.push(newJobId());
        batch.maxRetries.push(maxRetries);
        batch.queue.push(queue);
      }
    }
    if (skippedOnly.length > 0) {
      await this.db.query(this.sql.markPlannedUntilNow, [
        skippedOnly.map((schedule) => schedule.name),
        skippedOnly.map((schedule) => schedule.version),
      ]);
    }
    if (batch.slot.length === 0) return 0;
    const [result] = await this.db.query<{ planned: number }>(this.sql.planSlots, [
      batch.schedule,
      batch.version,
      batch.slot,
      batch.jobId,
      batch.maxRetries,
      this.options.instanceId,
      this.channel,
      NEW_JOB_NOTIFICATION,
      batch.queue,
    ]);
    if (result.planned > 0) this.logger.log(`Planned ${result.planned} cron job(s).`);
    return result.planned;
  }

  /** The latest slot that fell due after the last planned one and was never planned, if any. */
  private missedSlot(schedule: ScheduleRow, now: Date): Date | null {
    const { plannedUntil } = schedule;
    if (!plannedUntil || plannedUntil.getTime() >= now.getTime()) return null;
    const latest = latestSlotAtOrBefore(schedule, now);
    return latest && latest.getTime() > plannedUntil.getTime() ? latest : null;
  }
}
