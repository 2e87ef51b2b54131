import { NotFoundException } from '@nestjs/common';
import type { JobsDatabase } from '../database/jobs-database.js';
import type { FlowInfo } from '../job-queue/flow-options.interface.js';
import type { JobQueueService } from '../job-queue/job-queue.service.js';
import type { FlowListQuery } from './admin-input.js';
import type { AdminSql } from './admin.sql.js';
import { flowStateOf, progressOf } from './flow-progress.js';
import type { FlowProgress, ListedFlowInfo } from './flow-progress.js';

/** `JobsAdminService`'s flows: the list, one flow, and its cancel and retry. */
export class AdminFlows {
  constructor(
    private readonly db: JobsDatabase,
    private readonly sql: AdminSql,
    private readonly queue: JobQueueService,
  ) {}

  async list(query: FlowListQuery): Promise<{ flows: ListedFlowInfo[]; hasMore: boolean }> {
    const { limit, offset } = query;
    // One row more than asked tells whether there is a next page without counting the table.
    const rows = await this.db.query<Omit<ListedFlowInfo, 'state'>>(this.sql.listFlows, [
      limit + 1,
      offset,
    ]);
    const flows = rows
      .slice(0, limit)
      .map((flow) => ({ ...flow, state: flowStateOf(flow.counts) }));
    return { flows, hasMore: rows.length > limit };
  }

  async get(flowId: string): Promise<{ flow: FlowInfo & FlowProgress }> {
    const flow = await this.queue.getFlow(flowId);
    if (!flow) throw notFound(flowId);
    return { flow: { ...flow, ...progressOf(flow.jobs) } };
  }

  async cancel(flowId: string): Promise<{ cancelled: number }> {
    const cancelled = await this.queue.cancelFlow(flowId);
    if (cancelled === 0) await this.get(flowId);
    return { cancelled };
  }

  async retry(flowId: string): Promise<{ retried: number }> {
    const retried = await this.queue.retryFlow(flowId);
    if (retried === 0) await this.get(flowId);
    return { retried };
  }
}

function notFound(flowId: string): NotFoundException {
  return new NotFoundException(`No flow ${flowId}.`);
}
