import { Logger, Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { importOptionalPeer } from '../common/optional-peer.js';
import { JobsError, MissingPeerDependencyError } from '../errors/jobs.errors.js';
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
 * It needs an HTTP platform: `@nestjs/platform-express` (an optional peer dependency) or
 * `@nestjs/platform-fastify`; without either the boot fails with `MissingPeerDependencyError`.
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
    const { readOnly = false } = options;
    if (typeof readOnly !== 'boolean' && typeof readOnly !== 'function') {
      throw new JobsError(
        `JobsAdminModule option "readOnly" must be true, false or a function of the request; got ${JSON.stringify(readOnly)}.`,
      );
    }
    const readOnlyFor = typeof readOnly === 'function' ? readOnly : () => readOnly;
    const enabled = options.guard !== undefined || process.env.NODE_ENV === 'development';
    return {
      module: JobsAdminModule,
      imports: options.imports ?? [],
      providers: [
        httpPlatformCheck,
        JobsAdminService,
        ...(enabled ? [] : [{ provide: 'JOBS_ADMIN_DISABLED', useFactory: warnDisabled(path) }]),
      ],
      controllers: enabled
        ? [createAdminController(path, options.guard ? [options.guard] : [], readOnlyFor)]
        : [],
      exports: [JobsAdminService],
    };
  }
}

/** Fastify's platform, named through a variable: it is not installed here, so it has no types to check. */
const FASTIFY_PLATFORM: string = '@nestjs/platform-fastify';

/**
 * The dashboard is served over HTTP, by Express (`@nestjs/platform-express`, an optional peer
 * dependency, Nest's default) or Fastify. Checked when the module boots, so an app without either
 * fails then, saying what to install, rather than serving nothing.
 */
const httpPlatformCheck = {
  provide: Symbol('nestjs-pg-jobs:admin-http-platform'),
  useFactory: async (): Promise<string> => {
    try {
      await importOptionalPeer(
        '@nestjs/platform-express',
        'JobsAdminModule',
        'it serves the dashboard and its API over HTTP (an app on Fastify installs @nestjs/platform-fastify instead)',
        () => import('@nestjs/platform-express'),
      );
      return '@nestjs/platform-express';
    } catch (missingExpress) {
      if (!(missingExpress instanceof MissingPeerDependencyError)) throw missingExpress;
      await import(FASTIFY_PLATFORM).catch(() => {
        throw missingExpress;
      });
      return FASTIFY_PLATFORM;
    }
  },
};

function warnDisabled(path: string) {
  return () =>
    new Logger('JobsAdmin').warn(
      `The jobs dashboard (/${path}) is off: give JobsAdminModule.forRoot() a "guard" that decides who may use it ` +
        '(without one it only runs when NODE_ENV is "development").',
    );
}
