import type { InjectionToken } from '@nestjs/common';
import type { ModuleRef } from '@nestjs/core';
import { JobsError } from '../errors/jobs.errors.js';

/**
 * A provider of `JobsModule` seen from one of the opt-in modules (admin, metrics). Those are
 * imported next to `JobsModule.forRoot()`, not inside it, so they look across the app's modules
 * (as `@nestjs/terminus` finds a TypeORM connection) instead of asking users to make
 * `JobsModule` global.
 */
export function findInApp<T>(moduleRef: ModuleRef, token: InjectionToken, who: string): T {
  try {
    return moduleRef.get<T>(token, { strict: false });
  } catch (err) {
    throw new JobsError(
      `${who} found no JobsModule in this app: import JobsModule.forRoot() (or forRootAsync()) as well.`,
      { cause: err },
    );
  }
}
