import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../tools/dev-database.js';
import { waitFor } from '../support/jobs-app.js';

/**
 * `npm start` from a clean state, as a user runs it: no DATABASE_URL, so the app starts an
 * embedded PostgreSQL in a fresh data folder, serves the dashboard and runs jobs; a restart on the
 * same folder still knows them.
 */
const ROOT = process.cwd();
const BOOT_TIMEOUT = 90_000;
const dataRoot = mkdtempSync(join(tmpdir(), 'nestjs-pg-jobs-example-'));
const dataDir = join(dataRoot, 'pg');

interface RunningExample {
  child: ChildProcess;
  output: string[];
  url: string;
  exited: Promise<number | null>;
}

/** The command `npm start` runs, with this Node, in a clean environment. */
async function startExample(): Promise<RunningExample> {
  const script: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start;
  const [node, ...args] = script.split(' ');
  expect(node).toBe('node');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), EXAMPLE_DATA_DIR: dataDir };
  for (const name of ['DATABASE_URL', 'NODE_ENV', 'ADMIN_PASSWORD']) delete env[name];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    `the example app to answer on ${url}`,
    async () => {
      if (child.exitCode !== null) throw new Error(`The example app exited:\n${output.join('')}`);
      return (await fetch(`${url}/jobs-admin/api/stats`).catch(() => undefined))?.ok;
    },
    BOOT_TIMEOUT,
    200,
  );
  return { child, output, url, exited };
}

async function stopExample(app: RunningExample | undefined): Promise<number | null> {
  if (!app || app.child.exitCode !== null) return app?.child.exitCode ?? null;
  app.child.kill('SIGTERM');
  const timer = setTimeout(() => app.child.kill('SIGKILL'), 30_000);
  try {
    return await app.exited;
  } finally {
    clearTimeout(timer);
  }
}

let running: RunningExample | undefined;
afterAll(async () => {
  await stopExample(running);
  // A killed app leaves its embedded server running: stop it by the pid it wrote.
  const pidFile = join(dataDir, 'postmaster.pid');
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGINT');
      } catch {
        // Already gone.
      }
    }
  }
  rmSync(dataRoot, { recursive: true, force: true });
}, 60_000);

const post = (url: string, body: object) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const jobState = (url: string, id: string) =>
  fetch(`${url}/jobs/${id}`).then(
    (res) => res.json() as Promise<{ state: string; attempt: number }>,
  );

it(
  'serves the dashboard, runs a demo job, retries a failed one, and keeps them across a restart',
  async () => {
    running = await startExample();
    const { url } = running;
    expect(running.output.join('')).toContain(`Jobs dashboard: ${url}/jobs-admin`);

    const page = await fetch(`${url}/jobs-admin`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>Jobs dashboard</title>');

    const { id } = (await (await post(`${url}/jobs`, { name: 'Ada' })).json()) as { id: string };
    await waitFor(
      'the demo job to complete',
      async () => (await jobState(url, id)).state === 'completed',
      30_000,
    );
    expect(running.output.join('')).toContain('Hello, Ada!');

    const report = (await (await post(`${url}/reports`, { upTo: 50_000 })).json()) as {
      id: string;
    };
    await waitFor(
      'the worker-thread report to complete',
      async () => (await jobState(url, report.id)).state === 'completed',
      30_000,
    );

    const failing = (await (
      await post(`${url}/jobs`, { name: 'Bob', failAttempts: 1, maxRetries: 0 })
    ).json()) as {
      id: string;
    };
    await waitFor(
      'the flaky job to fail',
      async () => (await jobState(url, failing.id)).state === 'failed',
      30_000,
    );
    const retry = await fetch(`${url}/jobs-admin/api/jobs/${failing.id}/retry`, {
      method: 'POST',
      headers: { 'x-jobs-admin': '1' },
    });
    expect(retry.status).toBe(200);
    await waitFor(
      'the retried job to complete',
      async () => (await jobState(url, failing.id)).state === 'completed',
      30_000,
    );

    const metrics = await (await fetch(`${url}/metrics`)).text();
    // Two greetings at least: the quarter-hourly cron greeting may have run meanwhile.
    const completed =
      /^nestjs_pg_jobs_completed_total\{task="sendGreeting",queue="default"\} (\d+)$/m.exec(
        metrics,
      );
    expect(Number(completed?.[1])).toBeGreaterThanOrEqual(2);
    const schedules = (await (await fetch(`${url}/jobs-admin/api/schedules`)).json()) as {
      schedules: unknown[];
    };
    expect(schedules.schedules).toEqual([
      expect.objectContaining({ name: 'quarterHourlyGreeting', cron: '*/15 * * * *' }),
    ]);

    expect(await stopExample(running)).toBe(0);
    running = await startExample();
    expect(await jobState(running.url, id)).toMatchObject({ state: 'completed', attempt: 1 });
    expect(await jobState(running.url, failing.id)).toMatchObject({
      state: 'completed',
      attempt: 2,
    });
    expect(await stopExample(running)).toBe(0);
  },
  4 * BOOT_TIMEOUT,
);
