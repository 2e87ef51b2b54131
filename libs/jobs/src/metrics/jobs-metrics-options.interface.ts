import type { CanActivate, Type } from '@nestjs/common';
import type { Registry } from 'prom-client';

/**
 * Options of `JobsMetricsModule.forRoot()`.
 *
 * @publicApi
 */
export interface JobsMetricsModuleOptions {
  /**
   * Route of the Prometheus text endpoint. Default `'metrics'`. `false` mounts nothing: serve
   * `JobsMetricsService.metrics()` from a controller of your own, or scrape the `registry` you passed.
   */
  path?: string | false;
  /** The registry to register into, e.g. prom-client's default `register` with your app's metrics. Default: a registry of its own. */
  registry?: Registry;
  /** Prefix of every metric name. Default `nestjs_pg_jobs_`. */
  prefix?: string;
  /** Guards of the endpoint: classes (built in this module; see `imports`) or instances. */
  guards?: (Type<CanActivate> | CanActivate)[];
  /** Modules the guards' dependencies come from. */
  imports?: Type[];
}
