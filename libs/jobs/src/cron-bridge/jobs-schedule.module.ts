import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { optionChecks } from '../common/option-checks.js';
import { assertOptionsObject } from '../common/assert-options-object.js';
import { DEFAULT_SCHEDULE_TIMEZONE } from '../cron-schedule/validate-schedule.js';
import { isKnownTimeZone } from '../cron-schedule/time-zones.js';
import { InvalidCronOptionError } from '../errors/jobs.errors.js';
import { CronMethodExplorer, SCHEDULE_PEER } from './cron-method-explorer.js';
import type { LoadedSchedulePeer } from './cron-method-explorer.js';
import {
  DEFAULT_BRIDGED_CRON_MAX_RETRIES,
  JOBS_SCHEDULE_OPTIONS,
} from './jobs-schedule-options.interface.js';
import type {
  JobsScheduleModuleOptions,
  ResolvedJobsScheduleOptions,
} from './jobs-schedule-options.interface.js';
import { scheduleModuleWithoutCron } from './schedule-metadata.js';
import { loadSchedulePeer } from './schedule-peer.js';

/**
 * `@nestjs/schedule`, cluster-safe: import it instead of `ScheduleModule.forRoot()`, next to
 * `JobsModule.forRoot()`. Every `@Cron()` method then runs once per slot across all instances, as
 * a durable job (history, retries if asked, metrics, dashboard); `@Interval()`, `@Timeout()` and
 * `SchedulerRegistry` keep their local, per-instance behaviour (it imports
 * `ScheduleModule.forRoot({ cronJobs: false })`, which is global).
 *
 * ```ts
 * imports: [JobsModule.forRoot({ connection }), JobsScheduleModule.forRoot()]
 * ```
 *
 * @publicApi
 */
@Module({})
export class JobsScheduleModule {
  static forRoot(options: JobsScheduleModuleOptions = {}): DynamicModule {
    const resolved = resolveScheduleOptions(options);
    // Loaded while Nest builds the app (imports may be promises): no static import of the peer.
    const loading = loadSchedulePeer().then((peer) => ({
      peer,
      ...scheduleModuleWithoutCron(peer),
    }));
    return {
      module: JobsScheduleModule,
      // Its ScheduleModule is global: SchedulerRegistry, intervals and timeouts reach the whole app.
      imports: [loading.then(({ module }) => module), DiscoveryModule],
      providers: [
        { provide: JOBS_SCHEDULE_OPTIONS, useValue: resolved },
        {
          provide: SCHEDULE_PEER,
          useFactory: async (): Promise<LoadedSchedulePeer> => {
            const { peer, optionsToken } = await loading;
            return { peer, optionsToken };
          },
        },
        CronMethodExplorer,
      ],
    };
  }
}

const KNOWN_OPTIONS = new Set(['timezone', 'maxRetries']);

function resolveScheduleOptions(options: JobsScheduleModuleOptions): ResolvedJobsScheduleOptions {
  const fail = (option: string, value: unknown, expectation: string) =>
    new InvalidCronOptionError('JobsScheduleModule.forRoot()', option, value, expectation);
  assertOptionsObject(options, KNOWN_OPTIONS, fail);
  const timezone = options.timezone ?? DEFAULT_SCHEDULE_TIMEZONE;
  if (!isKnownTimeZone(timezone)) {
    throw fail(
      'timezone',
      timezone,
      'must be an IANA time zone such as "Europe/Berlin", or UTC±HH:MM',
    );
  }
  const maxRetries =
    options.maxRetries === undefined
      ? DEFAULT_BRIDGED_CRON_MAX_RETRIES
      : optionChecks(fail).integer('maxRetries', options.maxRetries, 0);
  return { timezone, maxRetries };
}
