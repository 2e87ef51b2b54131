import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';

export interface LifePayload {
  /** Snooze for this many seconds instead of completing (every attempt). */
  snooze?: number;
  /** Complete with this result. */
  result?: unknown;
}

/** Completes with the result its payload gives, or snoozes: what the dashboard shows of a job. */
@JobTask('life')
@Injectable()
export class LifeTask implements JobTaskHandler<LifePayload> {
  run(payload: LifePayload, ctx: JobContext): unknown {
    return payload.snooze === undefined ? payload.result : ctx.snooze(payload.snooze);
  }
}
