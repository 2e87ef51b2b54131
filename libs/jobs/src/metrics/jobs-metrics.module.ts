import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import type { JobsMetricsModuleOptions } from './jobs-metrics-options.interface.js';
import { createMetricsController } from './jobs-metrics.controller.js';
import {
  JOBS_METRICS_OPTIONS,
  JobsMetricsService,
  promClientProvider,
} from './jobs-metrics.service.js';

/**
 * Prometheus metrics of the queue, and a `GET /metrics` endpoint (opt-in). Import it next to
 * `JobsModule.forRoot()`:
 *
 * ```ts
 * imports: [JobsModule.forRoot({ ... }), JobsMetricsModule.forRoot({ path: 'metrics' })]
 * ```
 *
 * `JobsMetricsService` is exported: inject it to serve `metrics()` yourself. `prom-client` is an
 * optional peer dependency: install it to use this module (its absence fails the boot, saying so).
 *
 * @publicApi
 */
@Module({})
export class JobsMetricsModule {
  static forRoot(options: JobsMetricsModuleOptions = {}): DynamicModule {
    const path = options.path ?? 'metrics';
    return {
      module: JobsMetricsModule,
      imports: options.imports ?? [],
      providers: [
        { provide: JOBS_METRICS_OPTIONS, useValue: options },
        promClientProvider,
        JobsMetricsService,
      ],
      controllers: path === false ? [] : [createMetricsController(path, options.guards ?? [])],
      exports: [JobsMetricsService],
    };
  }
}
