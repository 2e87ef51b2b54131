import type { CanActivate, Type } from '@nestjs/common';

/**
 * Options of `JobsAdminModule.forRoot()`.
 *
 * @publicApi
 */
export interface JobsAdminModuleOptions {
  /** Route of the dashboard; the API is under `<path>/api`. Default `'jobs-admin'`. */
  path?: string;
  /**
   * Who may see the dashboard and use the API: a guard class (built in this module, with
   * dependencies from `imports`) or instance. Without one the dashboard and API are mounted only
   * when `NODE_ENV` is `development`: retrying and cancelling jobs, and reading their payloads,
   * is not for everyone.
   */
  guard?: Type<CanActivate> | CanActivate;
  /** Modules the guard's dependencies come from. */
  imports?: Type[];
  /**
   * For people who may look but not act: `true` for everyone the guard lets in, or a function of
   * the request (Express' or Fastify's, as the guard sees it) that answers `true` for those who
   * may only look, e.g. by a role of your session. Their retries, cancels, pauses and runs are
   * refused (403) and their page shows no action. Default `false`: the guard decides alone.
   */
  readOnly?: boolean | ((request: any) => boolean | Promise<boolean>);
}
