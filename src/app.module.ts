import { Module } from '@nestjs/common';
import { JobsModule } from 'nestjs-pg-jobs';
import { GreetingService } from './greeting/greeting.service.js';
import { SendGreetingTask } from './greeting/send-greeting.task.js';
import { JobsController } from './jobs.controller.js';

@Module({
  imports: [
    // forRootAsync: the options are read when the app boots, after main.ts has chosen the database.
    JobsModule.forRootAsync({
      useFactory: () => ({
        connection: process.env.DATABASE_URL,
        schema: 'example_jobs',
        retryBackoff: 2,
        maxRetries: 2,
      }),
    }),
  ],
  controllers: [JobsController],
  providers: [GreetingService, SendGreetingTask],
})
export class AppModule {}
