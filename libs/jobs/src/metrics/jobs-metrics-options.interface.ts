import type { CanActivate, Type } from '@nestjs/common';

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
  registry?: MetricsRegistry;
  /** Prefix of every metric name. Default `nestjs_pg_jobs_`. */
  prefix?: string;
  /** Guards of the endpoint: classes (built in this module; see `imports`) or instances. */
  guards?: (Type<CanActivate> | CanActivate)[];
  /** Modules the guards' dependencies come from. */
  imports?: Type[];
}

/**
 * A prom-client `Registry`, described by what the module uses of it: prom-client is an optional
 * peer dependency, so the library's declarations do not name its types (an app without it would
 * not compile). Pass prom-client's `register` or a `new Registry()`; cast it back to read more.
 *
 * @publicApi
 */
export interface MetricsRegistry {
  /** The metrics in Prometheus' text format. */
  metrics(): Promise<string>;
  /** The content type of that text. */
  readonly contentType: string;
}
