import { Injectable } from '@nestjs/common';
import { defineTask, JobContext, JobTask, JobTaskHandler, TaskPayload } from 'nestjs-pg-jobs';
import { z } from 'zod';
import { Mailer } from './mailer.js';

// A typed task (docs/tasks.md, "Typed tasks"): what producers and the handler both import.
export const SendWelcome = defineTask({
  name: 'sendWelcome',
  payloadSchema: z.object({ to: z.email(), locale: z.string().default('en') }),
  resultSchema: z.object({ messageId: z.string() }),
});

@JobTask(SendWelcome)
@Injectable()
export class SendWelcomeHandler implements JobTaskHandler<typeof SendWelcome> {
  constructor(private readonly mailer: Mailer) {}

  // payload: { to: string; locale: string }, the schema's output (the default applied)
  async run(payload: TaskPayload<typeof SendWelcome>, ctx: JobContext) {
    await this.mailer.send(payload.to, { signal: ctx.signal });
    return { messageId: `${payload.to}/${payload.locale}` };
  }
}
