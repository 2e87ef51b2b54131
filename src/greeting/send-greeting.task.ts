import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { GreetingService } from './greeting.service.js';

export interface GreetingPayload {
  name: string;
  /** For the demo: the first attempts up to this number fail, as a flaky mail server would. */
  failAttempts?: number;
}

/** An in-process task: Nest builds it with its dependencies, the queue calls `run` per job. */
@JobTask('sendGreeting')
@Injectable()
export class SendGreetingTask implements JobTaskHandler<GreetingPayload> {
  constructor(private readonly greetings: GreetingService) {}

  run(payload: GreetingPayload, ctx: JobContext): void {
    if (payload.name.trim() === '') throw new Error(`Job ${ctx.id}: nobody to greet`);
    if (ctx.attempt <= (payload.failAttempts ?? 0)) {
      throw new Error(`The mail server is down (attempt ${ctx.attempt})`);
    }
    this.greetings.send(payload.name);
  }
}
