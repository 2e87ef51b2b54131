import { Controller, Get, Inject, Res, UseGuards } from '@nestjs/common';
import type { CanActivate, Type } from '@nestjs/common';
import { JobsMetricsService } from './jobs-metrics.service.js';

/** Express' and Fastify's replies both take a header and a body this way. */
interface Reply {
  header(name: string, value: string): unknown;
  send(body: string): unknown;
}

/** The endpoint class, made per `forRoot()` so each app chooses its route and guards. */
export function createMetricsController(
  path: string,
  guards: (Type<CanActivate> | CanActivate)[],
): Type {
  @Controller(path)
  @UseGuards(...guards)
  class JobsMetricsController {
    constructor(@Inject(JobsMetricsService) private readonly metrics: JobsMetricsService) {}

    @Get()
    async scrape(@Res() reply: Reply): Promise<void> {
      const body = await this.metrics.metrics();
      reply.header('Content-Type', this.metrics.contentType);
      reply.header('Cache-Control', 'no-store');
      reply.send(body);
    }
  }
  return JobsMetricsController;
}
