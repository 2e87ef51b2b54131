/**
 * graphile-worker and pg-boss as sides of a bench, with their versions. They are dev dependencies
 * that need Node 22.18+ (graphile-worker 0.18 supports Node 22.18+, pg-boss 12 Node 22.12+, their
 * `engines`): a figure measured on an older Node would not be theirs, so on one they are not loaded
 * at all (nothing in them can then stop a bench from going on or exiting cleanly).
 */
import { readFileSync } from 'node:fs';
import type { SteadyConsumer } from './steady-load.js';
import type { DrainAndLatency } from './workloads.js';

export interface PeerSide {
  name: string;
  queue: DrainAndLatency;
  steady: SteadyConsumer;
  /** How it is set up, printed under a bench's table. */
  settings: string;
}

/** The peers, or why they cannot run on this Node. */
export async function loadPeers(): Promise<{ peers: PeerSide[] } | { skipped: string }> {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < 22 || (major === 22 && minor < 18)) {
    return {
      skipped: `graphile-worker 0.18 and pg-boss 12 need Node 22.18 or later, this is ${process.version}`,
    };
  }
  const devDependencies: Record<string, string> = JSON.parse(
    readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
  ).devDependencies;
  const { GRAPHILE_WORKER_SETTINGS, graphileWorker, graphileWorkerSteady } =
    await import('./graphile-worker.js');
  const { PG_BOSS_SETTINGS, pgBoss, pgBossSteady } = await import('./pg-boss.js');
  return {
    peers: [
      {
        name: `graphile-worker ${devDependencies['graphile-worker']}`,
        queue: graphileWorker,
        steady: graphileWorkerSteady,
        settings: GRAPHILE_WORKER_SETTINGS,
      },
      {
        name: `pg-boss ${devDependencies['pg-boss']}`,
        queue: pgBoss,
        steady: pgBossSteady,
        settings: PG_BOSS_SETTINGS,
      },
    ],
  };
}
