import { join } from 'node:path';
import { Module } from '@nestjs/common';
import { JobsModule } from 'nestjs-pg-jobs';
import { JobsScheduleModule } from 'nestjs-pg-jobs/schedule';
import { AppController } from './app.controller';
import { AppService } from './app.service';
import { HealthModule } from './health.module';
import { JobsController } from './jobs.controller';
import { Mailer } from './mailer';
import { ReportsService } from './reports.service';
import { SendEmail } from './send-email.task';
import { SendWelcomeHandler } from './send-welcome.task';

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
      workerModule: join(__dirname, 'report-worker.module.js'),
    }),
    JobsScheduleModule.forRoot(), // was: ScheduleModule.forRoot()
    HealthModule,
  ],
  controllers: [AppController, JobsController],
  providers: [AppService, Mailer, SendEmail, SendWelcomeHandler, ReportsService],
})
export class AppModule {}
