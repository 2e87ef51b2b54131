import { SetMetadata } from '@nestjs/common';
import type { DurableCronOptions } from './jobs-schedule-options.interface.js';

export const DURABLE_CRON_METADATA = 'nestjs-pg-jobs:durable-cron';

/**
 * Beside `@Cron()` on a method that `JobsScheduleModule` runs: what a durable schedule adds,
 * retries above all (none by default, as under `@nestjs/schedule`).
 *
 * ```ts
 * @Cron(CronExpression.EVERY_HOUR, { name: 'syncInvoices' })
 * @DurableCron({ maxRetries: 3, timeout: 600 })
 * async syncInvoices() { ... }
 * ```
 *
 * @publicApi
 */
export function DurableCron(options: DurableCronOptions): MethodDecorator {
  return SetMetadata(DURABLE_CRON_METADATA, options);
}
