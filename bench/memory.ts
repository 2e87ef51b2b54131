/**
 * `npm run bench:memory`: the resident memory of a process that runs jobs, measured in that process
 * alone (bench/memory-runner.mjs, forked, on the package built from this tree, with no TypeScript
 * loader), never in the bench's own:
 * - its start, stage by stage: Node, `pg`, `@nestjs/core`, the library imported, an app booted
 *   with `connection`; the median of STARTS processes (a start's RSS varies by a few MiB);
 * - for each size, a fresh process that drains that many no-op jobs at concurrency 50,
 *   REPETITIONS times, each drain's jobs queued beforehand (by the bench): its RSS before the
 *   drain, its peak during the drain (sampled every 20 ms) and its RSS after; before and after
 *   are taken after full collections (`--expose-gc`).
 * Then checks the targets: the boot under BOOT_TARGET_MIB, no drain of the largest size peaking
 * more than GROWTH_TARGET_MIB above its RSS before, and the RSS after the drains flat.
 *
 * A fresh process's first long drain grows V8's young generation to its maximum (two semi-spaces
 * of 16 MiB by default), which V8 sizes by how much survives its collections; the next drains
 * find it grown. `BENCH_MEMORY_JOBS` (sizes, comma-separated), `BENCH_REPETITIONS` and
 * `BENCH_MEMORY_NODE_FLAGS` (for the runner, such as `--max-semi-space-size=8`) change the run;
 * `BENCH_MEMORY_PACKAGE` measures a package built elsewhere (a folder inside a repository whose
 * node_modules it resolves from, such as another worktree's `dist/`).
 */
import 'reflect-metadata';
import { fork, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { JobQueueService, JobsModule } from 'nestjs-pg-jobs';
import { createDatabase, resolveDatabaseServer } from '../tools/dev-database.js';
import { pollUntil, summarise } from './stats.js';
import { BATCH_SIZE } from './workloads.js';

const SIZES = (process.env.BENCH_MEMORY_JOBS ?? '10000,50000').split(',').map(Number);
const REPETITIONS = Number(process.env.BENCH_REPETITIONS ?? 5);
const NODE_FLAGS = (process.env.BENCH_MEMORY_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const STARTS = 5;
const BOOT_TARGET_MIB = 95;
const GROWTH_TARGET_MIB = 10;
/** How much V8's heap after full collections may grow over a process's drains (compiled code). */
const HEAP_TOLERANCE_MIB = 1;
/** How much the RSS after a drain may exceed the RSS after the drain before, once settled. */
const FLAT_TOLERANCE_MIB = 2;

interface Memory {
  rss: number;
  heapUsed: number;
}
interface Stage {
  stage: string;
  memory: Memory;
  ormLoaded?: boolean;
  loaded?: string[];
}
type RunnerMessage =
  | Stage
  | { drainStarted: true; before: Memory }
  | { drainEnded: true; peak: number; after: Memory };

interface Drain {
  jobs: number;
  /** From 1, the first drain of its process. */
  repetition: number;
  before: Memory;
  peak: number;
  after: Memory;
  /** The drain's length on the database's clock, first start to last completion. */
  seconds: number;
}

const MiB = 1024 * 1024;
const fmt = (bytes: number) => (bytes / MiB).toFixed(1);
const signed = (bytes: number) => `${bytes >= 0 ? '+' : ''}${fmt(bytes)}`;

/** A forked runner and the messages it sent that nobody has taken yet. */
class Runner {
  private readonly child;
  private readonly inbox: RunnerMessage[] = [];
  private wake = () => {};
  private readonly exited: Promise<number | null>;

  constructor(build: string, url: string) {
    this.child = fork(
      fileURLToPath(new URL('memory-runner.mjs', import.meta.url)),
      [join(build, 'index.js')],
      {
        execArgv: ['--expose-gc', ...NODE_FLAGS],
        env: { ...process.env, DATABASE_URL: url, NODE_OPTIONS: '' },
      },
    );
    this.child.on('message', (message) => {
      this.inbox.push(message as RunnerMessage);
      this.wake();
    });
    this.exited = new Promise((resolve) => this.child.on('exit', resolve));
  }

  send(command: 'drain' | 'drained' | 'stop'): void {
    this.child.send(command);
  }

  /** The first message that `is`, waiting for it; throws if the runner exits first. */
  async next<T extends RunnerMessage>(is: (message: RunnerMessage) => message is T): Promise<T> {
    for (;;) {
      const found = this.inbox.findIndex(is);
      if (found >= 0) return this.inbox.splice(found, 1)[0] as T;
      const code = await Promise.race([
        new Promise<undefined>((resolve) => (this.wake = () => resolve(undefined))),
        this.exited,
      ]);
      if (code !== undefined) throw new Error(`bench: the runner exited (code ${code})`);
    }
  }

  /** Its start's stages, up to the boot. */
  async start(): Promise<Stage[]> {
    const stages: Stage[] = [];
    while (stages.at(-1)?.ormLoaded === undefined) {
      stages.push(await this.next((m): m is Stage => 'stage' in m));
    }
    return stages;
  }

  async stop(): Promise<void> {
    this.send('stop');
    await this.exited;
  }
}

const root = new URL('../', import.meta.url);
mkdirSync(new URL('dist/', root), { recursive: true });
/** A package built elsewhere (another tree's `tools/build-lib.mjs --out`), instead of this tree's. */
const given = process.env.BENCH_MEMORY_PACKAGE;
// Built into dist/, so that it resolves its dependencies from this repository's node_modules.
const build = given ?? mkdtempSync(join(fileURLToPath(root), 'dist', 'bench-memory-'));
const server = await resolveDatabaseServer(
  join(tmpdir(), 'nestjs-pg-jobs-bench', `pg-${process.pid}`),
);
const db = await createDatabase(server.url, 'jobs_bench_memory');
const client = new pg.Client({ connectionString: db.url });
try {
  if (!given) {
    const built = spawnSync(process.execPath, ['tools/build-lib.mjs', '--out', build], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (built.status !== 0) throw new Error('bench: the build failed');
  }

  // The bench's own app migrates and fills the queue, and runs no jobs. `default` stays paused but
  // while a drain runs.
  const filler = await NestFactory.createApplicationContext(
    JobsModule.forRoot({ connection: db.url, runJobs: false, allowUnknownTasks: true }),
    { logger: ['error'] },
  );
  const queue = filler.get(JobQueueService);
  await queue.pauseQueue('default');
  await client.connect();

  const starts: Stage[][] = [];
  for (let i = 0; i < STARTS; i++) {
    const runner = new Runner(build, db.url);
    starts.push(await runner.start());
    await runner.stop();
  }

  const completed = async () =>
    (
      await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM jobs."jobHistory" WHERE state = 'completed'`,
      )
    ).rows[0].n;
  async function drain(runner: Runner, jobs: number, repetition: number): Promise<Drain> {
    // Every drain alike: an empty history, the jobs queued in batches as an app adds them.
    await client.query(`TRUNCATE jobs."jobHistory"`);
    for (let offset = 0; offset < jobs; offset += BATCH_SIZE) {
      const n = Math.min(BATCH_SIZE, jobs - offset);
      await queue.addJobs(Array.from({ length: n }, () => ({ task: 'memory.noop' })));
    }
    runner.send('drain');
    const { before } = await runner.next(
      (m): m is Extract<RunnerMessage, { drainStarted: true }> => 'drainStarted' in m,
    );
    await pollUntil(async () => (await completed()) === jobs, 600_000, 'the drain', 250);
    runner.send('drained');
    const { peak, after } = await runner.next(
      (m): m is Extract<RunnerMessage, { drainEnded: true }> => 'drainEnded' in m,
    );
    const { rows } = await client.query<{ seconds: number }>(
      `SELECT extract(epoch FROM max("completedAt") - min("startedAt"))::float AS seconds
         FROM jobs."jobHistory"`,
    );
    console.error(`drain of ${jobs} jobs, repetition ${repetition}/${REPETITIONS} done`);
    return { jobs, repetition, before, peak, after, seconds: rows[0].seconds };
  }
  const drains: Drain[] = [];
  for (const jobs of SIZES) {
    const runner = new Runner(build, db.url);
    await runner.start();
    for (let repetition = 1; repetition <= REPETITIONS; repetition++) {
      drains.push(await drain(runner, jobs, repetition));
    }
    await runner.stop();
  }
  await filler.close();

  const flags = NODE_FLAGS.length > 0 ? `, runner flags ${NODE_FLAGS.join(' ')}` : '';
  console.log(
    `\nThe runner's start: RSS and V8 heap used after full collections, MiB, median of ${STARTS} ` +
      `processes (min–max); Node ${process.version}${flags}.\n`,
  );
  console.log('| stage | RSS | V8 heap used |\n| --- | ---: | ---: |');
  const stageNames = starts[0].map((stage) => stage.stage);
  const median = (values: number[]) => summarise(values).median;
  const medianRss: Record<string, number> = {};
  for (const [i, stage] of stageNames.entries()) {
    const rss = summarise(starts.map((start) => start[i].memory.rss));
    medianRss[stage] = rss.median;
    const heap = median(starts.map((start) => start[i].memory.heapUsed));
    console.log(
      `| ${stage} | ${fmt(rss.median)} (${fmt(rss.min)}–${fmt(rss.max)}) | ${fmt(heap)} |`,
    );
  }
  const boot = starts[0].at(-1)!;
  console.log(
    `\nAt boot: typeorm's index ${boot.ormLoaded ? 'loaded' : 'not loaded'}; ` +
      `files loaded of ${boot.loaded!.join(', ') || 'none of typeorm, prom-client, cron-parser, @opentelemetry/api'}.`,
  );

  console.log(
    `\nDrains of no-op jobs at concurrency 50, a fresh process for each size (MiB; before and ` +
      `after: after full collections; peak: sampled during the drain):\n`,
  );
  console.log(
    '| jobs | repetition | jobs/s | RSS before | peak | after | peak − before | after − before | V8 heap used after |\n' +
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  );
  for (const d of drains) {
    console.log(
      `| ${d.jobs} | ${d.repetition} | ${Math.round(d.jobs / d.seconds)} | ${fmt(d.before.rss)} | ` +
        `${fmt(d.peak)} | ${fmt(d.after.rss)} | ${signed(d.peak - d.before.rss)} | ` +
        `${signed(d.after.rss - d.before.rss)} | ${fmt(d.after.heapUsed)} |`,
    );
  }

  const largest = Math.max(...SIZES);
  const growth = (d: Drain) => d.peak - d.before.rss;
  const ofLargest = drains.filter((d) => d.jobs === largest);
  const first = growth(ofLargest[0]);
  const later = Math.max(...ofLargest.slice(1).map(growth));
  // Leaks show in what V8 keeps after full collections; the RSS settles over a few drains (the
  // young generation grows, the allocator's arenas fill), and then must stop growing.
  const drift = SIZES.map((jobs) => {
    const ofSize = drains.filter((d) => d.jobs === jobs);
    const [last, previous] = [ofSize.at(-1)!, ofSize.at(-2) ?? ofSize[0]];
    return {
      jobs,
      heap: last.after.heapUsed - ofSize[0].after.heapUsed,
      rss: last.after.rss - previous.after.rss,
    };
  });
  const bootRss = medianRss[boot.stage];
  const checks: [string, boolean, string][] = [
    [
      `boot with \`connection\` under ${BOOT_TARGET_MIB} MiB`,
      bootRss / MiB < BOOT_TARGET_MIB,
      `${fmt(bootRss)} MiB`,
    ],
    [
      `a fresh process's first drain of ${largest} jobs peaks at most ${GROWTH_TARGET_MIB} MiB above its RSS before`,
      first / MiB <= GROWTH_TARGET_MIB,
      `${signed(first)} MiB`,
    ],
    ...(REPETITIONS > 1
      ? [
          [
            `its next drains of ${largest} jobs, likewise (worst)`,
            later / MiB <= GROWTH_TARGET_MIB,
            `${signed(later)} MiB`,
          ] as [string, boolean, string],
        ]
      : []),
    [
      `flat: V8's heap after the last drain within ${HEAP_TOLERANCE_MIB} MiB of its size after the first, ` +
        `and the RSS after the last within ${FLAT_TOLERANCE_MIB} MiB of the RSS after the one before`,
      drift.every((d) => d.heap / MiB <= HEAP_TOLERANCE_MIB && d.rss / MiB <= FLAT_TOLERANCE_MIB),
      drift
        .map((d) => `${d.jobs} jobs: heap ${signed(d.heap)} MiB, RSS ${signed(d.rss)} MiB`)
        .join('; '),
    ],
  ];
  console.log(
    `\nTargets:\n${checks.map(([what, met, value]) => `- ${what}: ${value}, ${met ? 'met' : 'missed'}.`).join('\n')}`,
  );
  if (first / MiB > GROWTH_TARGET_MIB && later / MiB <= GROWTH_TARGET_MIB) {
    console.log(
      "  The first drain pays for growing V8's young generation (see the header of bench/memory.ts " +
        'and "Memory" in docs/performance.md); the drains after it find it grown.',
    );
  }
} finally {
  await client.end().catch(() => undefined);
  await db.drop();
  await server.stop();
  if (!given) rmSync(build, { recursive: true, force: true });
}
