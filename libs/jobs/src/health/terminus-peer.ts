import type * as Terminus from '@nestjs/terminus';
import { assertOptionalPeerInstalled, importOptionalPeer } from '../common/optional-peer.js';

const NEEDED_BY = 'nestjs-pg-jobs/health (JobsHealthIndicator)';
const WHY = 'it is a @nestjs/terminus health indicator';

// Importing nestjs-pg-jobs/health without the peer fails here, naming what to install: no file of
// the entry imports the peer statically (that would fail first, with ERR_MODULE_NOT_FOUND).
assertOptionalPeerInstalled('@nestjs/terminus', NEEDED_BY, WHY);

/** Loads `@nestjs/terminus` when the indicator boots. */
export function loadTerminusPeer(): Promise<Pick<typeof Terminus, 'HealthIndicatorService'>> {
  return importOptionalPeer('@nestjs/terminus', NEEDED_BY, WHY, () => import('@nestjs/terminus'));
}
