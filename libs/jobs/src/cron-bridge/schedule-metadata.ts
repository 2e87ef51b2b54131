import type { DynamicModule, InjectionToken, Provider } from '@nestjs/common';
import { JobsError } from '../errors/jobs.errors.js';
import type { SchedulePeer } from './schedule-peer.js';

/** Where `@nestjs/schedule` keeps what `@Cron()` says about a method, learnt from the package itself. */
export interface CronMetadataKeys {
  /** The key of the scheduler type, and the type's value for a cron method. */
  readonly type: string;
  readonly cronType: unknown;
  /** The key of `{ ...options, cronTime }`. */
  readonly options: string;
}

const PROBE_EXPRESSION = '1 2 3 4 5 *';
const PROBE_NAME = 'nestjs-pg-jobs:probe';

/**
 * `@nestjs/schedule` exports neither its metadata keys nor its options token, and its `exports`
 * forbid deep imports. So the keys are read off a probe method that `@Cron()` decorates here, and
 * the token off the providers of `ScheduleModule.forRoot()`: a version that stores them otherwise
 * fails the boot with this message, instead of leaving `@Cron()` methods silently unscheduled.
 */
export function readCronMetadataKeys({ Cron }: SchedulePeer): CronMetadataKeys {
  class Probe {
    probe(): void {}
  }
  const descriptor = Object.getOwnPropertyDescriptor(Probe.prototype, 'probe')!;
  Cron(PROBE_EXPRESSION, { name: PROBE_NAME })(Probe.prototype, 'probe', descriptor);
  const method = Probe.prototype.probe;
  const entries = (Reflect.getMetadataKeys(method) as unknown[])
    .filter((key): key is string => typeof key === 'string')
    .map((key) => [key, Reflect.getMetadata(key, method)] as const);
  const options = entries.find(
    ([, value]) =>
      (value as { cronTime?: unknown } | undefined)?.cronTime === PROBE_EXPRESSION &&
      (value as { name?: unknown }).name === PROBE_NAME,
  );
  // The type is the one entry that is neither the options nor the name.
  const type = entries.filter(
    ([key, value]) => key !== options?.[0] && value !== PROBE_NAME && typeof value === 'number',
  );
  if (!options || type.length !== 1) throw unsupported('the metadata @Cron() puts on a method');
  return { type: type[0][0], cronType: type[0][1], options: options[0] };
}

/** `ScheduleModule.forRoot({ cronJobs: false })`, and the token of its options provider. */
export function scheduleModuleWithoutCron({ ScheduleModule }: SchedulePeer): {
  module: DynamicModule;
  optionsToken: InjectionToken;
} {
  const module = ScheduleModule.forRoot({ cronJobs: false });
  const optionsProvider = (module.providers ?? []).find(
    (provider: Provider) =>
      typeof provider === 'object' &&
      'useValue' in provider &&
      (provider.useValue as { cronJobs?: unknown } | undefined)?.cronJobs === false,
  ) as { provide: InjectionToken } | undefined;
  if (!optionsProvider) throw unsupported('the options provider of ScheduleModule.forRoot()');
  return { module, optionsToken: optionsProvider.provide };
}

function unsupported(what: string): JobsError {
  return new JobsError(
    `JobsScheduleModule does not recognise ${what} in this version of @nestjs/schedule: ` +
      'it supports @nestjs/schedule 12 (install @nestjs/schedule@^12).',
  );
}
