import { BadRequestException, Body, Controller, Inject, Post } from '@nestjs/common';
import { JobQueueService } from 'nestjs-pg-jobs';

@Controller('reports')
export class ReportsController {
  constructor(@Inject(JobQueueService) private readonly queue: JobQueueService) {}

  /** `{"upTo": 2000000}` counts primes in a worker thread; follow it at GET /jobs/:id. */
  @Post()
  async enqueue(@Body() body: { upTo?: unknown }): Promise<{ id: string }> {
    const upTo = body?.upTo ?? 1_000_000;
    if (!Number.isSafeInteger(upTo) || (upTo as number) < 2) {
      throw new BadRequestException('"upTo" must be an integer >= 2');
    }
    const { id } = await this.queue.addJob({ task: 'renderReport', payload: { upTo } });
    return { id };
  }
}
