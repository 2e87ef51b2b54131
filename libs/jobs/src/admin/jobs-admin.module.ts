import { Logger, Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { JobsError } from '../errors/jobs.errors.js';
import type { JobsAdminModuleOptions } from './jobs-admin-options.interface.js';
import { createAdminController } from './jobs-admin.controller.js';
import { JobsAdminService } from './jobs-admin.service.js';

const PATH = /^[A-Za-z0-9_.~-]+(\/[A-Za-z0-9_.~-]+)*$/;

/**
 * The operator's side: a dashboard page and a JSON API to list, inspect, retry and cancel jobs and
 * read queue statistics (opt-in). Import it next to `JobsModule.forRoot()`:
 *
 * ```ts
 * imports: [JobsModule.forRoot({ ... }), JobsAdminModule.forRoot({ path: 'jobs-admin', guard: AdminGuard })]
 * ```
 *
 * @publicApi
 */
@Module({})
export class JobsAdminModule {
  static forRoot(options: JobsAdminModuleOptions = {}): DynamicModule {
    const path = (options.path ?? 'jobs-admin').replace(/^\/+|\/+$/g, '');
    if (!PATH.test(path) || path.split('/').some((segment) => /^\.+$/.test(segment))) {
      throw new JobsError(
        `JobsAdminModule option "path" must be a URL path of segments of letters, digits and "_.~-"; got ${JSON.stringify(options.path)}.`,
      );
    }
    const enabled = options.guard !== undefined || process.env.NODE_ENV === 'development';
    return {
      module: JobsAdminModule,
      imports: options.imports ?? [],
      providers: [
        JobsAdminService,
        ...(enabled ? [] : [{ provide: 'JOBS_ADMIN_DISABLED', useFactory: warnDisabled(path) }]),
      ],
      controllers: enabled
        ? [createAdminController(path, options.guard ? [options.guard] : [])]
        : [],
      exports: [JobsAdminService],
    };
  }
}

function warnDisabled(path: string) {
  return () =>
    new Logger('JobsAdmin').warn(
      `The jobs dashboard (/${path}) is off: give JobsAdminModule.forRoot() a "guard" that decides who may use it ` +
        '(without one it only runs when NODE_ENV is "development").',
    );
}
