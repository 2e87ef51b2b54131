import type { JobsDatabase } from '../database/jobs-database.js';
import { InvalidFlowError, InvalidPayloadError } from '../errors/jobs.errors.js';
import type { JobEventEmitter } from '../events/job-event-emitter.js';
import type { ChangedJob } from './bulk-operations.js';
import { checkPayloads } from './check-payloads.js';
import { enqueueError } from './enqueue-unreachable.js';
import type { QueueSql } from './job-queue.sql.js';
import type { JobDefaults } from './validate-job.js';
import { assertJobId } from './validate-queue-calls.js';
import { NEW_JOB_NOTIFICATION } from '../notify/notification-protocol.js';
import type { JobsTelemetry } from '../telemetry/jobs-telemetry.js';
import type { AddFlowOptions, AddedFlow, FlowInfo } from './flow-options.interface.js';
import { flowsSql } from './flows.sql.js';
import type { FlowsSql } from './flows.sql.js';
import { validateFlow } from './validate-flow.js';
import type { ValidatedFlow } from './validate-flow.js';

/** What the flows need of the queue they belong to. */
export interface FlowContext {
  readonly db: JobsDatabase;
  readonly queueSql: QueueSql;
  readonly channel: string;
  readonly instanceId: string;
  readonly defaults: JobDefaults;
  readonly telemetry: JobsTelemetry;
  readonly events: JobEventEmitter;
  /** Settles the waits and emits the events of jobs a cancel ended. */
  reportCancelled(jobs: readonly ChangedJob[]): void;
}

/**
 * Jobs that wait for other jobs: `JobQueueService`'s `addFlow`, `getFlow`, `cancelFlow` and
 * `retryFlow`.
 */
export class JobFlows {
  private readonly sql: FlowsSql;

  constructor(private readonly context: FlowContext) {
    this.sql = flowsSql(context.db.schema);
  }

  /** See `JobQueueService.addFlow`. */
  async addFlow(options: AddFlowOptions): Promise<AddedFlow> {
    const { defaults, telemetry } = this.context;
    const flow = validateFlow(options, defaults);
    const jobs = flow.jobs.map(({ job }) => job);
    try {
      // flow.jobs are options.jobs, validated, in the same order.
      const checking = checkPayloads(options.jobs, jobs, true);
      if (checking) await checking;
    } catch (err) {
      if (err instanceof InvalidPayloadError && err.index !== undefined) {
        throw new InvalidFlowError(flow.jobs[err.index].ref, err.message, { cause: err });
      }
      throw err;
    }
    try {
      if (telemetry.enabled) {
        await telemetry.send(jobs, (traceContext) => this.insert(options, flow, traceContext));
      } else {
        await this.insert(options, flow, null);
      }
    } catch (err) {
      throw enqueueError(err, jobs.length);
    }
    this.context.events.added(jobs);
    return {
      flowId: flow.flowId,
      jobs: Object.fromEntries(flow.jobs.map(({ ref, job }) => [ref, job.id])),
    };
  }

  /** See `JobQueueService.getFlow`. */
  async getFlow(flowId: string): Promise<FlowInfo | null> {
    assertJobId(flowId, 'flowId');
    const [row] = await this.context.db.query<FlowInfo>(
      this.sql.getFlow,
      this.sql.getFlow.values({ flowId }),
    );
    return row ?? null;
  }

  /**
   * See `JobQueueService.cancelFlow`. A job claimed while a round runs is running by the time the
   * round commits, yet that round's snapshot saw it queued: the next round cancels it. Rounds go on
   * until one cancels nothing.
   */
  async cancelFlow(flowId: string): Promise<number> {
    assertJobId(flowId, 'flowId');
    const { db, queueSql, channel } = this.context;
    let cancelled = 0;
    for (;;) {
      const [row] = await db.query<{ jobs: ChangedJob[] }>(queueSql.cancelFlow, [flowId, channel]);
      if (row.jobs.length === 0) return cancelled;
      cancelled += row.jobs.length;
      this.context.reportCancelled(row.jobs);
    }
  }

  /** See `JobQueueService.retryFlow`. */
  async retryFlow(flowId: string): Promise<number> {
    assertJobId(flowId, 'flowId');
    const [row] = await this.context.db.query<{ jobs: ChangedJob[] }>(
      this.sql.retryFlow,
      this.sql.retryFlow.values({
        flowId,
        createdBy: this.context.instanceId,
        channel: this.context.channel,
        notification: NEW_JOB_NOTIFICATION,
      }),
    );
    return row.jobs.length;
  }

  private insert(
    options: AddFlowOptions,
    flow: ValidatedFlow,
    traceContext: Parameters<Parameters<JobsTelemetry['send']>[1]>[0],
  ) {
    const { db, instanceId, channel } = this.context;
    return db.queryIn(
      options.manager,
      this.sql.insertFlow,
      this.sql.insertFlow.values({
        flow,
        createdBy: instanceId,
        traceContext,
        channel,
        notification: NEW_JOB_NOTIFICATION,
      }),
    );
  }
}
