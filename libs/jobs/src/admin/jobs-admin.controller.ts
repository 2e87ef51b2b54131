import {
  Controller,
  ForbiddenException,
  Get,
  Header,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  Req,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import type { CanActivate, ExecutionContext, Type } from '@nestjs/common';
import {
  parseFlowId,
  parseFlowListQuery,
  parseJobFilter,
  parseJobCountQuery,
  parseJobId,
  parseJobListQuery,
  parseMinutes,
  parseNoQuery,
  parseScheduleName,
  parseQueueName,
} from './admin-input.js';
import { ConditionalGetInterceptor } from './conditional-get.interceptor.js';
import { DASHBOARD_CSP, DASHBOARD_HTML } from './dashboard.page.js';
import { CANCELLABLE, DELETABLE, RETRYABLE } from '../job-queue/bulk-operations.js';
import { JobsAdminService } from './jobs-admin.service.js';

type Query = Record<string, unknown>;

/** Changing requests must carry this header: a cross-site form or image cannot set it. */
const ACTION_HEADER = 'x-jobs-admin';

/**
 * The dashboard page at `path` and its JSON API under `path/api`. Made per `forRoot()` so each
 * app chooses its route and guard. Every JSON answer of a `GET` carries an `ETag` and answers 304
 * to a request that holds it (`ConditionalGetInterceptor`), after the guard.
 */
export function createAdminController(
  path: string,
  guards: (Type<CanActivate> | CanActivate)[],
  readOnly: ReadOnlyDecision,
): Type {
  const actions = new ActionGuard(readOnly);

  @Controller(path)
  @UseGuards(...guards)
  @UseInterceptors(ConditionalGetInterceptor)
  class JobsAdminController {
    constructor(@Inject(JobsAdminService) private readonly admin: JobsAdminService) {}

    @Get()
    @Header('Content-Type', 'text/html; charset=utf-8')
    @Header('Content-Security-Policy', DASHBOARD_CSP)
    @Header('Cache-Control', 'no-store')
    dashboard(): string {
      return DASHBOARD_HTML;
    }

    /** What the page may offer this viewer: no action when read-only. */
    @Get('api/access')
    async access(@Query() query: Query, @Req() request: unknown) {
      parseNoQuery(query);
      return { readOnly: await readOnly(request) };
    }

    @Get('api/stats')
    stats(@Query() query: Query) {
      return this.admin.stats(parseMinutes(query));
    }

    @Get('api/jobs')
    jobs(@Query() query: Query) {
      return this.admin.listJobs(parseJobListQuery(query));
    }

    @Get('api/jobs/count')
    count(@Query() query: Query) {
      return this.admin.countJobs(parseJobCountQuery(query));
    }

    @Get('api/jobs/:id')
    job(@Param('id') id: string) {
      return this.admin.getJob(parseJobId(id));
    }

    @Post('api/jobs/retry')
    @UseGuards(actions)
    @HttpCode(200)
    retryAll(@Query() query: Query) {
      return this.admin.retryJobs(parseJobFilter(query, RETRYABLE));
    }

    @Post('api/jobs/cancel')
    @UseGuards(actions)
    @HttpCode(200)
    cancelAll(@Query() query: Query) {
      return this.admin.cancelJobs(parseJobFilter(query, CANCELLABLE));
    }

    @Post('api/jobs/delete')
    @UseGuards(actions)
    @HttpCode(200)
    deleteAll(@Query() query: Query) {
      return this.admin.deleteJobs(parseJobFilter(query, DELETABLE));
    }

    @Post('api/jobs/:id/retry')
    @UseGuards(actions)
    @HttpCode(200)
    retry(@Param('id') id: string) {
      return this.admin.retryJob(parseJobId(id));
    }

    @Post('api/jobs/:id/run')
    @UseGuards(actions)
    @HttpCode(200)
    runNow(@Param('id') id: string) {
      return this.admin.runJobNow(parseJobId(id));
    }

    @Post('api/jobs/:id/cancel')
    @UseGuards(actions)
    @HttpCode(200)
    cancel(@Param('id') id: string) {
      return this.admin.cancelJob(parseJobId(id));
    }

    @Get('api/tasks')
    tasks(@Query() query: Query) {
      parseNoQuery(query);
      return this.admin.listTasks();
    }

    @Get('api/schedules')
    schedules(@Query() query: Query) {
      parseNoQuery(query);
      return this.admin.schedules();
    }

    @Post('api/schedules/:name/pause')
    @UseGuards(actions)
    @HttpCode(200)
    pause(@Param('name') name: string) {
      return this.admin.pauseSchedule(parseScheduleName(name));
    }

    @Post('api/schedules/:name/resume')
    @UseGuards(actions)
    @HttpCode(200)
    resume(@Param('name') name: string) {
      return this.admin.resumeSchedule(parseScheduleName(name));
    }

    @Post('api/schedules/:name/trigger')
    @UseGuards(actions)
    @HttpCode(200)
    trigger(@Param('name') name: string) {
      return this.admin.triggerSchedule(parseScheduleName(name));
    }

    @Get('api/instances')
    instances(@Query() query: Query) {
      parseNoQuery(query);
      return this.admin.instances();
    }

    @Get('api/queues')
    queues(@Query() query: Query) {
      parseNoQuery(query);
      return this.admin.queues();
    }

    @Get('api/queues/:name/depth')
    queueDepth(@Param('name') name: string, @Query() query: Query) {
      return this.admin.queueDepth(parseQueueName(name), parseMinutes(query));
    }

    @Post('api/queues/:name/pause')
    @UseGuards(actions)
    @HttpCode(200)
    pauseQueue(@Param('name') name: string) {
      return this.admin.setQueuePaused(parseQueueName(name), true);
    }

    @Post('api/queues/:name/resume')
    @UseGuards(actions)
    @HttpCode(200)
    resumeQueue(@Param('name') name: string) {
      return this.admin.setQueuePaused(parseQueueName(name), false);
    }

    @Get('api/flows')
    flows(@Query() query: Query) {
      return this.admin.listFlows(parseFlowListQuery(query));
    }

    @Get('api/flows/:id')
    flow(@Param('id') id: string) {
      return this.admin.getFlow(parseFlowId(id));
    }

    @Post('api/flows/:id/cancel')
    @UseGuards(actions)
    @HttpCode(200)
    cancelFlow(@Param('id') id: string) {
      return this.admin.cancelFlow(parseFlowId(id));
    }

    @Post('api/flows/:id/retry')
    @UseGuards(actions)
    @HttpCode(200)
    retryFlow(@Param('id') id: string) {
      return this.admin.retryFlow(parseFlowId(id));
    }

    @Get('api/durations')
    durations(@Query() query: Query) {
      return this.admin.durations(parseMinutes(query));
    }

    @Get('api/throughput')
    throughput(@Query() query: Query) {
      return this.admin.throughput(parseMinutes(query));
    }
  }
  return JobsAdminController;
}

/**
 * The guard of every request that changes something, after the app's own: it must carry
 * `X-Jobs-Admin: 1`, and come from someone who may act (not `readOnly`).
 */
class ActionGuard implements CanActivate {
  constructor(private readonly readOnly: ReadOnlyDecision) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest();
    if (request.headers[ACTION_HEADER] !== '1') {
      throw new ForbiddenException(
        `Send the header "X-Jobs-Admin: 1" with requests that change jobs (it keeps other sites from triggering them).`,
      );
    }
    if (await this.readOnly(request)) {
      throw new ForbiddenException('This dashboard is read-only for you: you may look, not act.');
    }
    return true;
  }
}

/** Whether a request may only look (`JobsAdminModuleOptions.readOnly`), whatever was configured. */
export type ReadOnlyDecision = (request: unknown) => boolean | Promise<boolean>;
