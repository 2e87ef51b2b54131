/**
 * The held-horizon comparison of issue 28 item 4, for `npm run bench:horizon` and
 * `npm run bench:peers`: each queue's steady load run free and then held (`steady-load.ts`), the
 * last interval of one against the other's (target: at least 0.7), and the tables they print.
 */
import { formatNumber } from './harness.js';
import type { BenchServer } from './harness.js';
import type { Latency } from './stats.js';
import { runSteadyLoad } from './steady-load.js';
import type {
  ClaimProbe,
  IntervalFigures,
  SteadyConsumer,
  SteadyLoadSettings,
} from './steady-load.js';

/** A side's two runs, and whether its last interval under the held horizon met the target. */
export interface HorizonComparison {
  name: string;
  free: IntervalFigures[];
  held: IntervalFigures[];
  /** The last interval's throughput held ÷ free. */
  ratio: number;
  met: boolean;
}

/** The target of issue 28 item 4: the last interval held at least this share of the same one free. */
export const HORIZON_TARGET = 0.7;

/** Runs `sides` free, then held, each on fresh databases. */
export async function compareHorizon(
  server: BenchServer,
  sides: readonly (readonly [string, SteadyConsumer])[],
  settings: SteadyLoadSettings,
): Promise<HorizonComparison[]> {
  const comparisons: HorizonComparison[] = [];
  for (const [name, side] of sides) {
    const free = await runSteadyLoad(server, side, settings, { held: false });
    const held = await runSteadyLoad(server, side, settings, { held: true });
    const ratio = held.at(-1)!.startedPerSecond / free.at(-1)!.startedPerSecond;
    comparisons.push({ name, free, held, ratio, met: ratio >= HORIZON_TARGET });
  }
  return comparisons;
}

const mib = (bytes: number) => (bytes / 1048576).toFixed(1);

/** The comparisons as the printed tables and verdicts. */
export function describeHorizon(
  comparisons: readonly HorizonComparison[],
  settings: SteadyLoadSettings,
  vacuumed: boolean,
): string {
  const lines = [
    `Steady load: ${settings.rate} jobs/s enqueued (batches every 20 ms) and drained by one consumer at c=${settings.concurrency}, ` +
      `${settings.seconds} s per run, figures per ${settings.interval} s; "held": another session holds a REPEATABLE READ ` +
      `snapshot for the whole run. ${
        vacuumed
          ? `The server's autovacuum is off: the run VACUUMs the queue's tables every ${settings.vacuumEvery} s.`
          : "Vacuum is the server's own."
      } Latency: enqueue to handler start, ms (p50 / p95 / p99).`,
  ];
  for (const { name, free, held, ratio, met } of comparisons) {
    lines.push(
      '',
      `${name}:`,
      '',
      '| s | jobs/s free | held | latency free | latency held | backlog held | dead rows free / held | MiB free / held | most-read indexes, entries per scan: free / held | claim ms, buffers free / held |',
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    );
    free.forEach((f, i) => {
      const h = held[i];
      const lat = (l: Latency) =>
        `${formatNumber(l.p50)} / ${formatNumber(l.p95)} / ${formatNumber(l.p99)}`;
      const claim = (c?: ClaimProbe) => (c ? `${c.ms.toFixed(2)} ms, ${c.buffers}` : '—');
      const reads = (i: IntervalFigures) =>
        i.mostReadIndexes
          .map((index) => `${Math.round(index.entriesPerScan)} (${index.name})`)
          .join(', ') || '—';
      lines.push(
        `| ${Math.round(f.seconds)} | ${Math.round(f.startedPerSecond)} | ${Math.round(h.startedPerSecond)} | ` +
          `${lat(f.latency)} | ${lat(h.latency)} | ${h.backlog} | ${f.deadRows} / ${h.deadRows} | ` +
          `${mib(f.bytes)} / ${mib(h.bytes)} | ${reads(f)} / ${reads(h)} | ${claim(f.claim)} / ${claim(h.claim)} |`,
      );
    });
    const [f, h] = [free.at(-1)!, held.at(-1)!];
    const big = (r: Record<string, number>) =>
      Object.entries(r)
        .map(([rel, bytes]) => `${rel} ${mib(bytes)}`)
        .join(', ') || 'none over 1 MiB';
    lines.push(
      '',
      `Relations at the end (MiB), free: ${big(f.relations)}; held: ${big(h.relations)}.`,
      `Target: the last interval held at least ${HORIZON_TARGET} × free: ${ratio.toFixed(2)} ` +
        `(${Math.round(h.startedPerSecond)} ÷ ${Math.round(f.startedPerSecond)} jobs/s): ${met ? 'met' : 'MISSED'}; ` +
        `its p50 latency held ÷ free: ${(h.latency.p50 / f.latency.p50).toFixed(2)}.`,
    );
  }
  return lines.join('\n');
}
