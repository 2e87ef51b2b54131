import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';

export interface FlakyPayload {
  /** Attempts up to this number fail with `message`; later ones succeed. */
  failUntilAttempt?: number;
  message?: string;
}

/** Fails its first attempts with a known message, then succeeds: a job an operator retries. */
@JobTask('flaky')
@Injectable()
export class FlakyTask implements JobTaskHandler<FlakyPayload> {
  run(payload: FlakyPayload, ctx: JobContext): void {
    if (ctx.attempt <= (payload.failUntilAttempt ?? 0)) {
      throw new Error(payload.message ?? `attempt ${ctx.attempt} failed`);
    }
  }
}
