import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';

export interface LifePayload {
  /** Snooze for this many seconds instead of completing, `times` times (default: every run). */
  snooze?: number;
  times?: number;
  /** Complete with this result. */
  result?: unknown;
}

/** How many times each job has snoozed, by job id. */
const snoozed = new Map<string, number>();

/** Completes with the result its payload gives, or snoozes: what the dashboard shows of a job. */
@JobTask('life')
@Injectable()
export class LifeTask implements JobTaskHandler<LifePayload> {
  run(payload: LifePayload, ctx: JobContext): unknown {
    const times = snoozed.get(ctx.id) ?? 0;
    if (payload.snooze === undefined || times >= (payload.times ?? Infinity)) return payload.result;
    snoozed.set(ctx.id, times + 1);
    return ctx.snooze(payload.snooze);
  }
}
