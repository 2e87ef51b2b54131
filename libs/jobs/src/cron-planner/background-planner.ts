import type { Logger } from '@nestjs/common';
import { Tick } from '../common/tick.js';
import type { JobsDatabase } from '../database/jobs-database.js';
import type { TaskRegistry } from '../discovery/task-registry.js';
import { InvalidScheduleError } from '../errors/jobs.errors.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { validateSchedule } from '../cron-schedule/validate-schedule.js';
import type { ValidatedSchedule } from '../cron-schedule/validate-schedule.js';
import type { CronSql } from './cron-planner.sql.js';
import type { PlanningRound } from './planning-round.js';
import type { ScheduleWriter } from './schedule-writer.js';

/**
 * What every instance's planner does on its own, behind `CronPlannerService`: writes the static
 * schedules it declares at boot (and removes the static schedules of its tasks that it no longer
 * declares), then runs a planning round at once and on every `scheduledCheck`.
 *
 * Static schedules come from `JobsModule.forRoot({ schedules })`, `@JobTask({ cron })` and
 * `@Cron()` methods under `JobsScheduleModule`. A boot round plans whoever holds the round lock;
 * later rounds plan only under it, which spares the other instances a round that one of them has
 * just done.
 */
export class BackgroundPlanner {
  private readonly tick: Tick;
  private staticSchedules: readonly ValidatedSchedule[] = [];
  private staticSynced = false;

  constructor(
    private readonly options: ResolvedJobsOptions,
    private readonly db: JobsDatabase,
    private readonly registry: TaskRegistry,
    private readonly sql: CronSql,
    private readonly writer: ScheduleWriter,
    private readonly round: PlanningRound,
    private readonly logger: Logger,
  ) {
    this.tick = new Tick(
      'Planning cron jobs',
      options.scheduledCheck * 1000,
      () => this.scheduledRound(),
      logger,
    );
  }

  /**
   * Validates the static schedules once the handlers are discovered: a bad one (a payload its
   * task's `payloadSchema` refuses among them) fails the boot.
   */
  async prepare(): Promise<void> {
    const fromTasks = this.registry.names.flatMap((name) => {
      const { cron, timezone, payload, missedSlots, missedSlotGrace, overlap } =
        this.registry.get(name)!.options;
      if (cron === undefined) return [];
      return [
        validateSchedule(
          { task: name, cron, timezone, payload, missedSlots, missedSlotGrace, overlap },
          'static',
          this.options.missedSlotGrace,
        ),
      ];
    });
    const schedules = [...this.options.schedules, ...fromTasks];
    const seen = new Set<string>();
    for (const schedule of schedules) {
      if (seen.has(schedule.name)) {
        throw new InvalidScheduleError(
          schedule.name,
          'name',
          schedule.name,
          'is declared twice (names are unique)',
        );
      }
      seen.add(schedule.name);
      await this.writer.check(schedule);
    }
    this.staticSchedules = schedules;
  }

  /**
   * Writes the static schedules and plans once, then plans on every `scheduledCheck` (where a
   * failed boot round is retried).
   */
  start(): Promise<void> {
    return this.tick.startNow(() => this.bootRound());
  }

  stop(): Promise<void> {
    return this.tick.stop();
  }

  /**
   * At boot an instance plans whoever holds the round lock: a round a peer has just done predates
   * the static schedules this instance has just written.
   */
  private async bootRound(): Promise<void> {
    await this.syncStaticSchedules();
    await this.round.run();
  }

  private async scheduledRound(): Promise<number> {
    await this.syncStaticSchedules();
    const locked = await this.db.query(this.sql.takeRoundLock, [
      this.options.instanceId,
      this.options.scheduledCheck / 2,
    ]);
    return locked.length > 0 ? this.round.run() : 0;
  }

  private async syncStaticSchedules(): Promise<void> {
    if (this.staticSynced) return;
    for (const schedule of this.staticSchedules) await this.writer.write(schedule);
    const stale = await this.db.query<{ name: string }>(this.sql.staleStaticSchedules, [
      this.registry.names,
      this.staticSchedules.map((schedule) => schedule.name),
    ]);
    for (const { name } of stale) {
      await this.writer.remove(name);
      this.logger.log(`Removed static schedule "${name}": no longer declared by this instance.`);
    }
    this.staticSynced = true;
  }
}
