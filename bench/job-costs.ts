/**
 * The cost per job of a queue's enqueue and drain, counted with `db-costs.ts`, for
 * `npm run bench:costs` and `npm run bench:peers` alike: every queue (the library, the baseline,
 * the floor, graphile-worker, pg-boss) runs the drain workload of `npm run bench` on a fresh
 * database, its jobs enqueued in batches of `BATCH_SIZE` then drained by one consumer at c=50, and
 * the run is cut in two at the point where its jobs are queued and no consumer has started
 * (`backlogQueued`): the enqueue, and the drain. Each is run twice, with `jobs` jobs and with none;
 * the difference over `jobs` is the cost per job, without what a run costs whatever its size
 * (booting and stopping, migrations, a last empty claim). No `CHECKPOINT` is taken first: a
 * full-page image is counted only when the server checkpoints during the run, and shown apart.
 */
import { costPoint, costsBetween, keepingWal } from './db-costs.js';
import type { CostPoint, Costs, TableRows } from './db-costs.js';
import type { BenchServer } from './harness.js';
import { BATCH_SIZE } from './workloads.js';
import type { DrainAndLatency } from './workloads.js';

/** A stretch of a run: given the run's database, its jobs and `mark`, to await at each point that ends one. */
export type Stretches = (url: string, jobs: number, mark: () => Promise<void>) => Promise<unknown>;

/** Runs `stretches` on a fresh database and returns the costs between its marks (and its ends). */
export function countStretches(
  server: BenchServer,
  stretches: Stretches,
  jobs: number,
): Promise<Costs[]> {
  return server.onFreshDatabase((url) =>
    keepingWal(url, { checkpoint: false }, async () => {
      const points: CostPoint[] = [await costPoint(url)];
      await stretches(url, jobs, async () => {
        points.push(await costPoint(url));
      });
      points.push(await costPoint(url));
      const costs: Costs[] = [];
      for (let i = 1; i < points.length; i++) {
        costs.push(await costsBetween(url, points[i - 1], points[i]));
      }
      return costs;
    }),
  );
}

/** `full` less `empty`, over `jobs`: what one job adds. */
function perJob(full: Costs, empty: Costs, jobs: number): Costs {
  const per = (a: number, b = 0) => (a - b) / jobs;
  const tables: Record<string, TableRows> = {};
  for (const [name, rows] of Object.entries(full.tables)) {
    const e = empty.tables[name];
    tables[name] = {
      inserted: per(rows.inserted, e?.inserted),
      updated: per(rows.updated, e?.updated),
      hot: per(rows.hot, e?.hot),
      deleted: per(rows.deleted, e?.deleted),
      dead: per(rows.dead, e?.dead),
    };
  }
  const managers = new Set([...Object.keys(full.walByManager), ...Object.keys(empty.walByManager)]);
  return {
    statements: per(full.statements, empty.statements),
    inserted: per(full.inserted, empty.inserted),
    updated: per(full.updated, empty.updated),
    hotUpdated: per(full.hotUpdated, empty.hotUpdated),
    deleted: per(full.deleted, empty.deleted),
    walBytes: per(full.walBytes, empty.walBytes),
    walScope: full.walScope,
    walServerWide: per(full.walServerWide, empty.walServerWide),
    walImages: per(full.walImages, empty.walImages),
    tables,
    walByManager: Object.fromEntries(
      [...managers].map((m) => [m, per(full.walByManager[m] ?? 0, empty.walByManager[m])]),
    ),
  };
}

/** The cost per job of each stretch of `stretches`: a run of `jobs` less a run of none. */
export async function costsPerJob(
  server: BenchServer,
  stretches: Stretches,
  jobs: number,
): Promise<Costs[]> {
  const full = await countStretches(server, stretches, jobs);
  const empty = await countStretches(server, stretches, 0);
  return full.map((costs, i) => perJob(costs, empty[i], jobs));
}

export const ENQUEUE = `enqueue in batches of ${BATCH_SIZE}`;
export const DRAIN = 'drain c=50 x1';

/** The per-job costs of `side`'s enqueue in batches and its drain at c=50, one instance. */
export async function enqueueAndDrainCosts(
  server: BenchServer,
  side: DrainAndLatency,
  jobs: number,
): Promise<Record<string, Costs>> {
  const [enqueue, drain] = await costsPerJob(
    server,
    (url, n, mark) => side.drain(url, 50, 1, n, mark),
    jobs,
  );
  return { [ENQUEUE]: enqueue, [DRAIN]: drain };
}

type Measure = 'statements' | 'inserted' | 'updated' | 'hotUpdated' | 'deleted' | 'walBytes';
const MEASURES: readonly (readonly [Measure | 'walImages', string])[] = [
  ['statements', 'statements (round trips)'],
  ['inserted', 'rows inserted'],
  ['updated', 'rows updated'],
  ['hotUpdated', '… of which HOT (no index entry)'],
  ['deleted', 'rows deleted'],
  ['walBytes', 'WAL bytes'],
  ['walImages', '… of which full-page images'],
];

/** Rounded, with no "-0" for a difference of two runs that rounds to nothing. */
const format = (measure: string, n: number) =>
  measure.startsWith('wal')
    ? (Math.round(n) || 0).toLocaleString('en')
    : (Math.abs(n) < 0.0005 ? 0 : n).toFixed(3);

/**
 * The costs per job as a table (a row per workload and measure, a column per side), then where
 * they go: rows by table, WAL by resource manager. `costs[workload][side]`; a side that did not run
 * a workload shows "—".
 */
export function describeCosts(
  costs: Record<string, Record<string, Costs>>,
  sides: readonly string[],
): string {
  const scope = Object.values(costs)
    .flatMap((bySide) => Object.values(bySide))
    .every((c) => c.walScope === 'database')
    ? "this database's records and their commits (pg_walinspect)"
    : "the server's, read while the bench is its only writer (no pg_walinspect)";
  const lines = [
    `WAL: ${scope}.`,
    '',
    `| workload | per job | ${sides.join(' | ')} |`,
    `| --- | --- | ${sides.map(() => '---:').join(' | ')} |`,
  ];
  for (const [workload, bySide] of Object.entries(costs)) {
    for (const [measure, label] of MEASURES) {
      const cells = sides.map((side) =>
        bySide[side] ? format(measure, bySide[side][measure]) : '—',
      );
      lines.push(`| ${workload} | ${label} | ${cells.join(' | ')} |`);
    }
  }
  lines.push('', 'Where they go, per job (rows by table; WAL bytes by resource manager):');
  for (const [workload, bySide] of Object.entries(costs)) {
    for (const [side, c] of Object.entries(bySide)) {
      const rows = Object.entries(c.tables).flatMap(([table, t]) =>
        (['inserted', 'updated', 'hot', 'deleted'] as const)
          .filter((kind) => Math.abs(t[kind]) >= 0.0005)
          .map((kind) => `${table} ${kind === 'hot' ? 'HOT' : kind} ${t[kind].toFixed(3)}`),
      );
      const wal = Object.entries(c.walByManager)
        .filter(([, bytes]) => Math.round(bytes) !== 0)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([manager, bytes]) => `WAL ${manager} ${Math.round(bytes)}`);
      lines.push(`- ${workload}, ${side}: ${[...rows, ...wal].join('; ')}`);
    }
  }
  return lines.join('\n');
}
