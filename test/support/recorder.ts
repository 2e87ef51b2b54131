import { Inject, Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';

/** Which app instance a handler runs in: each test app provides its own name under this token. */
export const INSTANCE_NAME = 'TEST_INSTANCE_NAME';

export interface Execution {
  id: string;
  instance: string;
  attempt: number;
  payload: unknown;
  startedAt: number;
}

/** Every execution of the recording task, in start order, across all apps of a test file. */
export const executions: Execution[] = [];

/** Records each execution; the payload may ask it to wait (`ms`) or to fail (`fail`). */
@JobTask('record')
@Injectable()
export class RecordTask implements JobTaskHandler<{ ms?: number; fail?: string }> {
  constructor(@Inject(INSTANCE_NAME) private readonly instance: string) {}

  async run(payload: { ms?: number; fail?: string }, ctx: JobContext): Promise<void> {
    executions.push({
      id: ctx.id,
      instance: this.instance,
      attempt: ctx.attempt,
      payload,
      startedAt: Date.now(),
    });
    if (payload?.ms) await new Promise((resolve) => setTimeout(resolve, payload.ms));
    if (payload?.fail) throw new Error(payload.fail);
  }
}

/** The providers an app needs to run `RecordTask` as instance `name`. */
export function recording(name: string) {
  return { tasks: [RecordTask], providers: [{ provide: INSTANCE_NAME, useValue: name }] };
}
