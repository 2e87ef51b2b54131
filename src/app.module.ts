import { Module } from '@nestjs/common';
import { JobsAdminModule, JobsMetricsModule, JobsModule } from 'nestjs-pg-jobs';
import { AdminGuard } from './admin/admin.guard.js';
import { FailureAlertsService } from './alerts/failure-alerts.service.js';
import { GreetingService } from './greeting/greeting.service.js';
import { SendGreetingTask } from './greeting/send-greeting.task.js';
import { JobsController } from './jobs.controller.js';
import { ReportsController } from './reports/reports.controller.js';

@Module({
  imports: [
    // forRootAsync: the options are read when the app boots, after main.ts has chosen the database.
    JobsModule.forRootAsync({
      useFactory: () => ({
        connection: process.env.DATABASE_URL,
        schema: 'example_jobs',
        pollingCheck: 1,
        scheduledCheck: 60,
        retryBackoff: 2,
        maxRetries: 2,
        // A day of history for the dashboard; older endings are pruned in batches.
        historyExpiration: 86400,
        // A cron schedule: every quarter hour, one greeting, on one instance of the cluster.
        schedules: [
          {
            name: 'quarterHourlyGreeting',
            task: 'sendGreeting',
            cron: '*/15 * * * *',
            payload: { name: 'the quarter hour' },
          },
        ],
        // Worker tasks run in a thread pool that boots this module in every thread. From the
        // sources (npm start) the threads load TypeScript through the process's own
        // `--import ./tools/ts-loader/register.mjs`, which they inherit: no workerExecArgv needed.
        // From the sources the `.js` file is missing, and its `.ts` source is booted instead.
        workerModule: new URL('./reports/report-worker.module.js', import.meta.url).href,
      }),
    }),
    // The dashboard and its API at /jobs-admin, for whoever AdminGuard lets in.
    JobsAdminModule.forRoot({ path: 'jobs-admin', guard: AdminGuard }),
    // Prometheus metrics at /metrics.
    JobsMetricsModule.forRoot({ path: 'metrics' }),
  ],
  controllers: [JobsController, ReportsController],
  providers: [GreetingService, SendGreetingTask, FailureAlertsService],
})
export class AppModule {}
