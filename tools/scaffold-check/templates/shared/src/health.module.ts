import { Controller, Get, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { JobsHealthIndicator } from 'nestjs-pg-jobs/health';

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly jobs: JobsHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.jobs.isHealthy('jobs', { maxLag: 60 })]);
  }
}

@Module({
  imports: [TerminusModule],
  controllers: [HealthController],
  providers: [JobsHealthIndicator],
})
export class HealthModule {} // imported next to JobsModule.forRoot()
