import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { JobEventsService } from 'nestjs-pg-jobs';
import type { Subscription } from 'rxjs';

/**
 * Subscribes to job events: a job that failed for good is what would page someone in a
 * real app (here it is logged).
 */
@Injectable()
export class FailureAlertsService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Alerts');
  private subscription?: Subscription;

  constructor(@Inject(JobEventsService) private readonly events: JobEventsService) {}

  onModuleInit(): void {
    this.subscription = this.events.on('failed').subscribe((event) => {
      if (!event.willRetry) {
        this.logger.error(`Job ${event.id} (${event.task}) failed for good: ${event.error}`);
      }
    });
  }

  onModuleDestroy(): void {
    this.subscription?.unsubscribe();
  }
}
