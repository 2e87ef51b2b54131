import { Module } from '@nestjs/common';
import { JobsModule } from 'nestjs-pg-jobs';
import { JobsScheduleModule } from 'nestjs-pg-jobs/schedule';
import { AppController } from './app.controller.js';
import { AppService } from './app.service.js';
import { HealthModule } from './health.module.js';
import { JobsController } from './jobs.controller.js';
import { Mailer } from './mailer.js';
import { ReportsService } from './reports.service.js';
import { SendEmail } from './send-email.task.js';
import { SendWelcomeHandler } from './send-welcome.task.js';

@Module({
  imports: [
    JobsModule.forRoot({
      connection: process.env.DATABASE_URL,
      schedules: [
        {
          name: 'hourlyDigest',
          task: 'sendEmail',
          cron: '0 * * * *',
          payload: { to: 'team@example.com' },
        },
      ],
      workers: 'auto',
      workerModule: new URL('./report-worker.module.js', import.meta.url).href,
    }),
    JobsScheduleModule.forRoot(), // was: ScheduleModule.forRoot()
    HealthModule,
  ],
  controllers: [AppController, JobsController],
  providers: [AppService, Mailer, SendEmail, SendWelcomeHandler, ReportsService],
})
export class AppModule {}
