import type * as Schedule from '@nestjs/schedule';
import { assertOptionalPeerInstalled, importOptionalPeer } from '../common/optional-peer.js';

const NEEDED_BY = 'nestjs-pg-jobs/schedule (JobsScheduleModule)';
const WHY = 'it runs the @Cron() methods of @nestjs/schedule as durable schedules';

/** `@nestjs/schedule`, the package: what the bridge uses of it, loaded when it boots. */
export type SchedulePeer = Pick<typeof Schedule, 'Cron' | 'ScheduleModule' | 'SchedulerRegistry'>;

// Importing nestjs-pg-jobs/schedule without the peer fails here, naming what to install: no file of
// the entry imports the peer statically (that would fail first, with ERR_MODULE_NOT_FOUND).
assertOptionalPeerInstalled('@nestjs/schedule', NEEDED_BY, WHY);

/** Loads `@nestjs/schedule` when the bridge boots. */
export function loadSchedulePeer(): Promise<SchedulePeer> {
  return importOptionalPeer('@nestjs/schedule', NEEDED_BY, WHY, () => import('@nestjs/schedule'));
}
