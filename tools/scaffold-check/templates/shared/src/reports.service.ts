import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';

@Injectable()
export class ReportsService {
  // Through JobsScheduleModule: once per slot across all instances, as a durable job.
  @Cron('0 2 * * *', { name: 'nightlyReport' })
  nightly() {}
}
