import { Test } from '@nestjs/testing';
import type { TestingModule } from '@nestjs/testing';
import type { ModuleMetadata, Provider, Type } from '@nestjs/common';
import { JobQueueService, JobsModule } from 'nestjs-pg-jobs';
import type { JobsModuleOptions } from 'nestjs-pg-jobs';

/** What an instance is made of: task classes, other providers, module options. */
export interface AppSetup {
  tasks?: Type[];
  providers?: Provider[];
  options?: Partial<JobsModuleOptions>;
  /** Modules the app imports besides `JobsModule`. */
  imports?: ModuleMetadata['imports'];
}

export interface JobsApp {
  readonly module: TestingModule;
  readonly queue: JobQueueService;
  close(): Promise<void>;
}

/** Apps of this test file that have not been closed: `useTestDatabase` closes them before it drops. */
const openApps = new Set<JobsApp>();

/** How long `closeOpenApps` waits before it fails, saying what the database was doing. */
const CLOSE_DEADLINE_MS = 45_000;

/**
 * Closes every app `startJobsApp` started that is still open. A close that hangs fails here, before
 * Jest's hook timeout, with what `describeHang` tells (the sessions still at work): a hook timeout
 * alone says nothing of which statement or lock held the shutdown up.
 */
export async function closeOpenApps(describeHang?: () => Promise<string>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => {
    timer = setTimeout(() => resolve('hung'), CLOSE_DEADLINE_MS);
  });
  const closing = [...openApps].map((app) => app.close());
  try {
    if ((await Promise.race([Promise.all(closing), hung])) !== 'hung') return;
  } finally {
    clearTimeout(timer);
  }
  const state = await (describeHang?.() ?? Promise.resolve('')).catch(
    (err: unknown) => `(could not read the sessions: ${String(err)})`,
  );
  const warnings = (globalThis as { __jobsWarnings?: string[] }).__jobsWarnings ?? [];
  throw new Error(
    `${openApps.size} app(s) still closing after ${CLOSE_DEADLINE_MS} ms.\n` +
      `Sessions of the test database:\n${state}\nLatest warnings:\n${warnings.join('\n')}`,
  );
}

/**
 * Boots one instance: a Nest app with `JobsModule.forRoot` on `url` and the given task classes,
 * as a user's app would be. Several in one test file are several instances on one database.
 */
export async function startJobsApp(url: string, setup: AppSetup = {}): Promise<JobsApp> {
  const module = await Test.createTestingModule({
    imports: [JobsModule.forRoot({ connection: url, ...setup.options }), ...(setup.imports ?? [])],
    providers: [...(setup.tasks ?? []), ...(setup.providers ?? [])],
  })
    .setLogger(quietLogger)
    .compile();
  await module.init();
  let closing: Promise<void> | undefined;
  const app: JobsApp = {
    module,
    queue: module.get(JobQueueService),
    close: () => (closing ??= module.close().finally(() => openApps.delete(app))),
  };
  openApps.add(app);
  return app;
}

/**
 * The latest warnings of the running test, which test/support/test-environment.mjs prints if the
 * test fails: a failure on CI explains itself without JOBS_TEST_LOG.
 */
function keepWarning(line: string): void {
  const kept = ((globalThis as { __jobsWarnings?: string[] }).__jobsWarnings ??= []);
  if (kept.length >= 200) kept.shift();
  kept.push(line);
}

/**
 * Errors always, warnings with JOBS_TEST_LOG=1 (or, kept, when the test fails): what a failing
 * test needs to explain itself.
 */
export const quietLogger = {
  log: () => undefined,
  debug: () => undefined,
  verbose: () => undefined,
  warn: (message: unknown, context?: unknown) => {
    if (process.env.JOBS_TEST_LOG) console.warn(context, message);
    else keepWarning(`${new Date().toISOString()} [${String(context)}] ${String(message)}`);
  },
  error: (message: unknown, context?: unknown) => console.error(context, message),
};

/** Polls `check` until it returns a value other than `undefined`/`false`, or fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 10_000,
  intervalMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`Timed out after ${timeoutMs}ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
