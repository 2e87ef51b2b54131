import { SetMetadata } from '@nestjs/common';
import type { JobTaskOptions } from './job-task.interfaces.js';

export const JOB_TASK_METADATA = 'nestjs-pg-jobs:task';

/**
 * Marks an `@Injectable()` class as the handler of a task. The class implements
 * `JobTaskHandler` and is found among the app's providers at boot.
 *
 * ```ts
 * @JobTask('sendEmail')
 * @Injectable()
 * export class SendEmail implements JobTaskHandler<{ to: string }> {
 *   constructor(private readonly mailer: Mailer) {}
 *   async run(payload: { to: string }, ctx: JobContext) { ... }
 * }
 * ```
 *
 * A task definition (`defineTask`) goes here too: `@JobTask(SendEmail)`, with its schemas.
 *
 * @publicApi
 */
export function JobTask(nameOrOptions: string | JobTaskOptions): ClassDecorator {
  const options = typeof nameOrOptions === 'string' ? { name: nameOrOptions } : nameOrOptions;
  return SetMetadata(JOB_TASK_METADATA, options);
}
