import {
  BadRequestException,
  Body,
  Controller,
  Get,
  Inject,
  NotFoundException,
  Param,
  Post,
} from '@nestjs/common';
import { InvalidJobOptionsError, JobQueueService } from 'nestjs-pg-jobs';
import type { JobInfo } from 'nestjs-pg-jobs';

interface EnqueueBody {
  name?: unknown;
  failAttempts?: unknown;
  maxRetries?: unknown;
}

/** How an app enqueues: inject `JobQueueService` where the work comes from. */
@Controller('jobs')
export class JobsController {
  constructor(@Inject(JobQueueService) private readonly queue: JobQueueService) {}

  /**
   * `{"name": "Ada"}` greets Ada; `"failAttempts": n` makes the first n attempts fail, and
   * `"maxRetries": 0` lets the job fail for good at once (to retry it from the dashboard).
   */
  @Post()
  async enqueue(@Body() body: EnqueueBody): Promise<{ id: string }> {
    const { name, failAttempts = 0, maxRetries } = body ?? {};
    if (typeof name !== 'string') throw new BadRequestException('Send {"name": "..."}');
    if (!Number.isInteger(failAttempts)) {
      throw new BadRequestException('"failAttempts" must be an integer');
    }
    try {
      const { id } = await this.queue.addJob({
        task: 'sendGreeting',
        payload: { name, failAttempts },
        maxRetries: maxRetries as number | undefined,
      });
      return { id };
    } catch (err) {
      if (err instanceof InvalidJobOptionsError) throw new BadRequestException(err.message);
      throw err;
    }
  }

  @Get(':id')
  async show(@Param('id') id: string): Promise<JobInfo> {
    const job = await this.queue.getJob(id).catch((err: unknown) => {
      if (err instanceof InvalidJobOptionsError) throw new BadRequestException('Not a job id');
      throw err;
    });
    if (!job) throw new NotFoundException(`No job ${id}`);
    return job;
  }
}
