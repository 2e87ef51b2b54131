/**
 * What `npm run bench` and `npm run bench:peers` share: the database server and a fresh database
 * per workload, the drain and latency figures of one repetition, the medians' formatting, and the
 * JSON file each run leaves in bench/results/.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, resolveDatabaseServer } from '../tools/dev-database.js';
import { latency } from './stats.js';
import type { Figure, Latency } from './stats.js';
import { JOBS } from './workloads.js';
import type { DrainAndLatency } from './workloads.js';

/** One repetition of a side's workloads, as figures by workload name. */
export type Sample = Record<string, number>;

export interface BenchServer {
  /** Where PostgreSQL came from (the one at 127.0.0.1:5432, or an embedded one), for the report. */
  source: string;
  /** Runs `fn` on a database of its own, dropped afterwards. */
  onFreshDatabase<T>(fn: (url: string) => Promise<T>): Promise<T>;
  stop(): Promise<void>;
}

/** The server the tests use, or an embedded one when there is none. */
export async function openBenchServer(): Promise<BenchServer> {
  const server = await resolveDatabaseServer(
    join(tmpdir(), 'nestjs-pg-jobs-bench', `pg-${process.pid}`),
  );
  return {
    source: server.source,
    async onFreshDatabase(fn) {
      const db = await createDatabase(server.url, 'jobs_bench');
      try {
        return await fn(db.url);
      } finally {
        await db.drop();
      }
    },
    stop: () => server.stop(),
  };
}

export const perSecond = (ms: number) => (JOBS / ms) * 1000;

/** Drains `JOBS` jobs with `side` on a fresh database; adds `drain c=… x…` (jobs/s) and its peak RSS. */
export async function recordDrain(
  sample: Sample,
  server: BenchServer,
  side: DrainAndLatency,
  concurrency: number,
  instances: number,
): Promise<void> {
  const run = await server.onFreshDatabase((url) => side.drain(url, concurrency, instances));
  const name = `drain c=${concurrency} x${instances}`;
  sample[name] = perSecond(run.ms);
  sample[`${name} peak RSS`] = run.peakRssMiB;
}

/** The latency workload with `side` on a fresh database; adds `latency p50`, `p95`, `p99` and `max` (ms). */
export async function recordLatency(
  sample: Sample,
  server: BenchServer,
  side: DrainAndLatency,
): Promise<Latency> {
  const lat = latency(await server.onFreshDatabase((url) => side.latency(url)));
  sample['latency p50'] = lat.p50;
  sample['latency p95'] = lat.p95;
  sample['latency p99'] = lat.p99;
  sample['latency max'] = lat.max;
  return lat;
}

/** The unit of a workload's figures, and which way is better, from its name. */
export function unitOf(workload: string): { unit: string; better: 'higher' | 'lower' } {
  if (workload.startsWith('latency')) return { unit: 'ms', better: 'lower' };
  if (workload.endsWith('RSS')) return { unit: 'MiB', better: 'lower' };
  return { unit: 'jobs/s', better: 'higher' };
}

export const formatNumber = (n: number) => (n >= 100 ? Math.round(n).toString() : n.toFixed(2));

/** `median (min–max)`. */
export const formatFigure = (f: Figure) =>
  `${formatNumber(f.median)} (${formatNumber(f.min)}–${formatNumber(f.max)})`;

/** Writes `report` to bench/results/`name`-<date>.json; returns the file's path. */
export function writeResults(name: string, report: object): string {
  const results = new URL('./results/', import.meta.url);
  mkdirSync(results, { recursive: true });
  const date = new Date().toISOString();
  const file = new URL(`${name}-${date.replace(/[:.]/g, '-')}.json`, results);
  writeFileSync(file, JSON.stringify({ date, ...report }, null, 2));
  return file.pathname;
}
