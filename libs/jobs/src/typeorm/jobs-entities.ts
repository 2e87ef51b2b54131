import { Column, Entity, PrimaryColumn } from './mapping-decorators.js';
import type { ColumnType } from 'typeorm';
import { toSchemaName } from '../database/schema-name.js';
import { DEFAULT_SCHEMA } from '../options/defaults.js';
import type { JobState } from '../job-queue/job-info.interface.js';

/*
 * Read-only TypeORM mappings of the module's tables, for reports with an app's own repositories.
 * The module's migrations own these tables: `synchronize: false` keeps an app's schema sync (and
 * `migration:generate`) from ever altering them, and every table and column is named explicitly,
 * so that an app's naming strategy (snake_case, say) cannot rename them. Write nothing through
 * them: a row changed behind the module's back breaks its invariants (claims, fencing tokens).
 */

/** A column under its name in the table, whatever the app's naming strategy. */
function column(name: string, type: ColumnType, nullable = false): PropertyDecorator {
  return Column({ name, type, nullable });
}

const table = (name: string) => ({ name, schema: DEFAULT_SCHEMA, synchronize: false });

/**
 * A job waiting in the queue (table `jobs`), due or not. A claimed job leaves this table: its
 * attempts are in `JobHistoryEntity`.
 *
 * @publicApi
 */
@Entity(table('jobs'))
export class JobEntity {
  @PrimaryColumn({ name: 'id', type: 'uuid' }) id!: string;
  /** Insertion order (a bigint, read as a string). */
  @column('seq', 'bigint') seq!: string;
  @column('task', 'text') task!: string;
  @column('payload', 'jsonb') payload!: unknown;
  @column('priority', 'integer') priority!: number;
  /** When it becomes due. */
  @column('waitUntil', 'timestamptz') waitUntil!: Date;
  /** Attempts that failed so far. */
  @column('retries', 'integer') retries!: number;
  @column('maxRetries', 'integer') maxRetries!: number;
  @column('isScheduled', 'boolean') isScheduled!: boolean;
  @column('uniqueKey', 'text', true) uniqueKey!: string | null;
  /** Someone holds a promise of its end. */
  @column('awaited', 'boolean') awaited!: boolean;
  @column('createdBy', 'text', true) createdBy!: string | null;
  @column('createdAt', 'timestamptz') createdAt!: Date;
  @column('updatedAt', 'timestamptz') updatedAt!: Date;
  /** A planned cron job's deadline: claimed later, it is skipped. */
  @column('startBy', 'timestamptz', true) startBy!: Date | null;
  /** The schedule (`overlap: 'skip'`) whose active run makes the claim skip it. */
  @column('overlapSchedule', 'text', true) overlapSchedule!: string | null;
  /** The W3C trace context of the span that enqueued it (the `telemetry` option). */
  @column('traceContext', 'jsonb', true) traceContext!: Record<string, string> | null;
  /** Its queue as the enqueuing instance knew it for its task (the claim records the runner's). */
  @column('queue', 'text') queue!: string;
  /** `AddJobOptions.groupKey`: its group in its queue's `groupConcurrency`. */
  @column('groupKey', 'text', true) groupKey!: string | null;
  /** `true` for a job of a flow (`addFlow`). */
  @column('inFlow', 'boolean', true) inFlow!: boolean | null;
  /** How many of its flow dependencies have not ended: while above 0, it is blocked. */
  @column('blockedBy', 'integer', true) blockedBy!: number | null;
  /** A blocked job's own `waitUntil` (its `waitUntil` is 'infinity' until it is released). */
  @column('blockedWaitUntil', 'timestamptz', true) blockedWaitUntil!: Date | null;
  /** What a suspended job waits for (`JobInfo.waitingFor`, as stored); `null` otherwise. */
  @column('waitingFor', 'jsonb', true) waitingFor!: unknown;
  /**
   * `false` for a job as it was added; `true` for one queued again after an attempt or by a retry
   * (its history row holds its last error), and for a row written without the column.
   */
  @column('queuedAgain', 'boolean') queuedAgain!: boolean;
}

/**
 * A job's latest attempt (table `jobHistory`), one row per job that has run or ended: `active`
 * while it runs, then how it ended. A job waiting for its retry has a `failed` row here and a row
 * in `JobEntity`.
 *
 * @publicApi
 */
@Entity(table('jobHistory'))
export class JobHistoryEntity {
  @PrimaryColumn({ name: 'id', type: 'uuid' }) id!: string;
  @column('task', 'text') task!: string;
  @column('state', 'text') state!: Exclude<JobState, 'pending' | 'blocked'>;
  @column('payload', 'jsonb') payload!: unknown;
  @column('priority', 'integer') priority!: number;
  /** The attempt's number, from 1. */
  @column('attempt', 'integer') attempt!: number;
  @column('maxRetries', 'integer') maxRetries!: number;
  @column('wasScheduled', 'boolean') wasScheduled!: boolean;
  @column('awaited', 'boolean') awaited!: boolean;
  @column('lastErrorMessage', 'text', true) lastErrorMessage!: string | null;
  /** The instance that ran the attempt. */
  @column('executedBy', 'text', true) executedBy!: string | null;
  @column('createdAt', 'timestamptz') createdAt!: Date;
  @column('startedAt', 'timestamptz', true) startedAt!: Date | null;
  @column('completedAt', 'timestamptz', true) completedAt!: Date | null;
  @column('updatedAt', 'timestamptz') updatedAt!: Date;
  /** The W3C trace context of the span that enqueued the job (the `telemetry` option). */
  @column('traceContext', 'jsonb', true) traceContext!: Record<string, string> | null;
  /** What the completed attempt's task returned; `null` for nothing. */
  @column('result', 'jsonb', true) result!: unknown;
  /** The last progress the latest attempt reported (`ctx.reportProgress`). */
  @column('progress', 'jsonb', true) progress!: unknown;
  /** The queue the attempt ran in: its task's, on the instance that claimed it. */
  @column('queue', 'text') queue!: string;
  @column('groupKey', 'text', true) groupKey!: string | null;
  /** How many times the job's attempts snoozed (`ctx.snooze`), over its whole life. */
  @column('snoozes', 'integer') snoozes!: number;
  /** The claim of the latest attempt, which fences the writes that end it; bigint, as a string. */
  @column('claimToken', 'bigint', true) claimToken!: string | null;
  /** `true` for a job of a flow (`addFlow`). */
  @column('inFlow', 'boolean', true) inFlow!: boolean | null;
  /** `AddJobOptions.uniqueKey`, kept from the job's first claim on (the queue frees it there). */
  @column('uniqueKey', 'text', true) uniqueKey!: string | null;
}

/**
 * A cron schedule (table `jobSchedule`), as `CronPlannerService.listSchedules()` reports it.
 *
 * @publicApi
 */
@Entity(table('jobSchedule'))
export class JobScheduleEntity {
  @PrimaryColumn({ name: 'id', type: 'uuid' }) id!: string;
  @column('name', 'text') name!: string;
  @column('task', 'text') task!: string;
  @column('cron', 'text') cron!: string;
  @column('timezone', 'text') timezone!: string;
  @column('payload', 'jsonb') payload!: unknown;
  @column('missedSlots', 'text') missedSlots!: string;
  @column('missedSlotGrace', 'double precision') missedSlotGrace!: number;
  @column('overlap', 'text') overlap!: string;
  @column('paused', 'boolean') paused!: boolean;
  /** `static` (declared in code) or `dynamic` (`setSchedule`). */
  @column('source', 'text') source!: string;
  @column('version', 'integer') version!: number;
  /** The latest slot planned. */
  @column('plannedUntil', 'timestamptz', true) plannedUntil!: Date | null;
  @column('createdAt', 'timestamptz') createdAt!: Date;
  @column('updatedAt', 'timestamptz') updatedAt!: Date;
}

/**
 * A planned slot of a schedule and the job planned for it (table `jobScheduleSlot`).
 *
 * @publicApi
 */
@Entity(table('jobScheduleSlot'))
export class JobScheduleSlotEntity {
  @PrimaryColumn({ name: 'schedule', type: 'text' }) schedule!: string;
  @PrimaryColumn({ name: 'slot', type: 'timestamptz' }) slot!: Date;
  @column('jobId', 'uuid') jobId!: string;
  @column('plannedAt', 'timestamptz') plannedAt!: Date;
}

/**
 * A running instance and its heartbeat (table `instances`), on the database's clock.
 *
 * @publicApi
 */
@Entity(table('instances'))
export class JobsInstanceEntity {
  @PrimaryColumn({ name: 'id', type: 'text' }) id!: string;
  @column('hostname', 'text', true) hostname!: string | null;
  @column('pid', 'integer', true) pid!: number | null;
  @column('startedAt', 'timestamptz') startedAt!: Date;
  @column('heartbeatAt', 'timestamptz') heartbeatAt!: Date;
  /** Seconds of silence after which its peers take it for dead. */
  @column('instanceTimeout', 'double precision') instanceTimeout!: number;
  /** How many jobs it runs at once (0: none); null for an instance of a version that did not record it. */
  @column('concurrency', 'integer', true) concurrency!: number | null;
}

/**
 * The entity classes of the module's tables in one schema: give them to the app's `DataSource`
 * (`entities`, or `TypeOrmModule.forFeature(...)`) and read them with its repositories.
 *
 * @publicApi
 */
export interface JobsEntities {
  readonly JobEntity: typeof JobEntity;
  readonly JobHistoryEntity: typeof JobHistoryEntity;
  readonly JobScheduleEntity: typeof JobScheduleEntity;
  readonly JobScheduleSlotEntity: typeof JobScheduleSlotEntity;
  readonly JobsInstanceEntity: typeof JobsInstanceEntity;
}

const DEFAULT_ENTITIES: JobsEntities = {
  JobEntity,
  JobHistoryEntity,
  JobScheduleEntity,
  JobScheduleSlotEntity,
  JobsInstanceEntity,
};
const bySchema = new Map<string, JobsEntities>([[DEFAULT_SCHEMA, DEFAULT_ENTITIES]]);

/**
 * The entity classes of the module's tables in `schema` (the module's `schema` option). The
 * exported classes map the default schema, `jobs`; for another one this returns subclasses bound
 * to it, the same ones on every call (a repository is looked up by its class):
 *
 * ```ts
 * const { JobHistoryEntity } = jobsEntities('billing_jobs');
 * TypeOrmModule.forFeature(Object.values(jobsEntities('billing_jobs')))
 * ```
 *
 * @publicApi
 */
export function jobsEntities(schema: string = DEFAULT_SCHEMA): JobsEntities {
  const { name } = toSchemaName(schema);
  let entities = bySchema.get(name);
  if (!entities) {
    entities = {
      JobEntity: inSchema(JobEntity, 'jobs', name),
      JobHistoryEntity: inSchema(JobHistoryEntity, 'jobHistory', name),
      JobScheduleEntity: inSchema(JobScheduleEntity, 'jobSchedule', name),
      JobScheduleSlotEntity: inSchema(JobScheduleSlotEntity, 'jobScheduleSlot', name),
      JobsInstanceEntity: inSchema(JobsInstanceEntity, 'instances', name),
    };
    bySchema.set(name, entities);
  }
  return entities;
}

/** A subclass of `entity` on the same table in another schema; TypeORM inherits its columns. */
function inSchema<T extends new (...args: any[]) => object>(
  entity: T,
  tableName: string,
  schema: string,
): T {
  const bound = class extends entity {};
  Object.defineProperty(bound, 'name', { value: `${entity.name}_${schema}` });
  Entity({ name: tableName, schema, synchronize: false })(bound);
  return bound;
}
