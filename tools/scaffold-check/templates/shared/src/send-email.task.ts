import { Injectable } from '@nestjs/common';
import { JobContext, JobTask, JobTaskHandler } from 'nestjs-pg-jobs';
import { Mailer } from './mailer.js';

@JobTask('sendEmail') // the task name jobs are enqueued under
@Injectable()
export class SendEmail implements JobTaskHandler<{ to: string }> {
  constructor(private readonly mailer: Mailer) {} // any provider of your app
  async run(payload: { to: string }, ctx: JobContext) {
    return this.mailer.send(payload.to, { signal: ctx.signal }); // throw to fail the attempt
  }
}
