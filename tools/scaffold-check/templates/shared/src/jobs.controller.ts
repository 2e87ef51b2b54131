import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import { CronPlannerService, JobQueueService } from 'nestjs-pg-jobs';

@Controller('jobs')
export class JobsController {
  constructor(
    private readonly queue: JobQueueService,
    private readonly planner: CronPlannerService,
  ) {}

  /** Enqueues a job and answers with its result, once it has run on whichever instance. */
  @Post()
  async add(@Body() body: { task: string; payload: unknown }) {
    const { id, promise } = await this.queue.addJob({
      task: body.task,
      payload: body.payload,
      promise: true,
    });
    return { id, result: await promise };
  }

  @Get('schedules')
  async schedules() {
    return (await this.planner.listSchedules()).map((schedule) => schedule.name);
  }

  /** Runs a schedule once now, as a slot of it, and answers with the job once it has completed. */
  @Post('schedules/:name/trigger')
  async trigger(@Param('name') name: string) {
    const id = await this.planner.triggerSchedule(name);
    await this.queue.waitForJob(id); // throws unless it completes
    return this.queue.getJob(id);
  }
}
