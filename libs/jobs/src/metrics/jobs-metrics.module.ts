import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { importOptionalPeer } from '../common/optional-peer.js';
import type { JobsMetricsModuleOptions } from './jobs-metrics-options.interface.js';
import { createMetricsController } from './jobs-metrics.controller.js';
import { JOBS_METRICS_OPTIONS, JobsMetricsService, PROM_CLIENT } from './jobs-metrics.service.js';

/** prom-client, imported when the module boots: a missing one fails the boot, saying what to install. */
const promClientProvider = {
  provide: PROM_CLIENT,
  useFactory: () =>
    importOptionalPeer(
      'prom-client',
      'JobsMetricsModule',
      'it keeps the Prometheus metrics',
      () => import('prom-client'),
    ),
};

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
