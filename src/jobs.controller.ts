import {
  BadRequestException,
  Body,
  Controller,
  Get,
  NotFoundException,
  Param,
  Post,
} from '@nestjs/common';
import { JobQueueService } from 'nestjs-pg-jobs';
import type { JobInfo } from 'nestjs-pg-jobs';

@Controller('jobs')
export class JobsController {
  constructor(private readonly queue: JobQueueService) {}

  @Post()
  async enqueue(@Body() body: { name?: unknown }): Promise<{ id: string }> {
    if (typeof body?.name !== 'string') throw new BadRequestException('Send {"name": "..."}');
    const { id } = await this.queue.addJob({ task: 'sendGreeting', payload: { name: body.name } });
    return { id };
  }

  @Get(':id')
  async show(@Param('id') id: string): Promise<JobInfo> {
    const job = await this.queue.getJob(id).catch(() => {
      throw new BadRequestException('Not a job id');
    });
    if (!job) throw new NotFoundException(`No job ${id}`);
    return job;
  }
}
