/**
 * `npm run bench:compare -- <git-ref> [runs]`: the library's no-op drain (c=50 and c=10, one
 * instance) and idle latency at `<git-ref>` against the working tree, runs of the two interleaved
 * on the same database server, each on a fresh database, each in a process of its own. Prints each
 * figure's median (min–max) for both, the ratio, and whether the working tree's median is within
 * the reference's run-to-run spread (inside or better than its min–max): what a change must show
 * to claim it costs the hot path nothing.
 *
 * The reference is checked out as a detached worktree under the system's temp folder, with this
 * checkout's node_modules when the lockfiles match (else `npm ci` there), and kept for later runs.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDatabase, resolveDatabaseServer } from '../tools/dev-database.js';
import { latency, summarise } from './stats.js';
import type { Figure } from './stats.js';
import { JOBS } from './workloads.js';

const [ref, runsArgument] = process.argv.slice(2);
if (!ref) {
  console.error('Usage: npm run bench:compare -- <git-ref> [runs]');
  process.exit(2);
}
const RUNS = Number(runsArgument ?? 5);
const here = fileURLToPath(new URL('..', import.meta.url));
const git = (...args: string[]) =>
  execFileSync('git', args, { cwd: here, encoding: 'utf8' }).trim();

const sha = git('rev-parse', '--verify', `${ref}^{commit}`);
const reference = join(tmpdir(), `nestjs-pg-jobs-compare-${sha.slice(0, 12)}`);
if (!existsSync(reference)) {
  git('worktree', 'add', '--detach', reference, sha);
  const sameLockfile = spawnSync('git', ['diff', '--quiet', sha, '--', 'package-lock.json'], {
    cwd: here,
  });
  if (sameLockfile.status === 0)
    symlinkSync(join(here, 'node_modules'), join(reference, 'node_modules'));
  else execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: reference, stdio: 'inherit' });
}
copyFileSync(join(here, 'bench/compare-driver.ts'), join(reference, 'bench/compare-driver.ts'));

const server = await resolveDatabaseServer(
  join(tmpdir(), 'nestjs-pg-jobs-bench', `pg-${process.pid}`),
);

/** Runs one workload in `checkout`, on a fresh database; returns what the driver printed. */
async function run(checkout: string, args: string[]): Promise<unknown> {
  const db = await createDatabase(server.url, 'jobs_compare');
  try {
    const child = spawnSync(
      process.execPath,
      [
        '--import',
        './tools/ts-loader/register.mjs',
        'bench/compare-driver.ts',
        args[0],
        db.url,
        ...args.slice(1),
      ],
      { cwd: checkout, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    if (child.status !== 0)
      throw new Error(`bench:compare: ${args[0]} failed in ${checkout}:\n${child.stderr}`);
    return JSON.parse(child.stdout.trim().split('\n').pop()!);
  } finally {
    await db.drop();
  }
}

type Sample = Record<string, number>;

async function measure(checkout: string): Promise<Sample> {
  const sample: Sample = {};
  for (const concurrency of [50, 10]) {
    const { ms } = (await run(checkout, ['drain', String(concurrency)])) as { ms: number };
    sample[`drain c=${concurrency} x1 (jobs/s)`] = (JOBS / ms) * 1000;
  }
  const lat = latency((await run(checkout, ['latency'])) as number[]);
  sample['latency p50 (ms)'] = lat.p50;
  sample['latency p99 (ms)'] = lat.p99;
  return sample;
}

const samples = { current: [] as Sample[], reference: [] as Sample[] };
for (let i = 0; i < RUNS; i++) {
  samples.reference.push(await measure(reference));
  samples.current.push(await measure(here));
  console.error(`run ${i + 1}/${RUNS} done`);
}
await server.stop();

const fmt = (n: number) => (n >= 100 ? Math.round(n).toString() : n.toFixed(2));
const range = (f: Figure) => `${fmt(f.median)} (${fmt(f.min)}–${fmt(f.max)})`;
console.log(
  `\nWorking tree against ${ref} (${sha.slice(0, 12)}), ${RUNS} interleaved runs, ${JOBS} jobs per drain.\n`,
);
console.log('| workload | working tree | reference | ratio | within the reference spread |');
console.log('| --- | --- | --- | --- | --- |');
for (const workload of Object.keys(samples.current[0])) {
  const current = summarise(samples.current.map((s) => s[workload]));
  const before = summarise(samples.reference.map((s) => s[workload]));
  const lowerIsBetter = workload.startsWith('latency');
  const within = lowerIsBetter ? current.median <= before.max : current.median >= before.min;
  console.log(
    `| ${workload} | ${range(current)} | ${range(before)} | ${(current.median / before.median).toFixed(2)} | ${within ? 'yes' : 'NO'} |`,
  );
}
