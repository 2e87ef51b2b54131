import { fileURLToPath } from 'node:url';
import type { JobsModuleOptions } from 'nestjs-pg-jobs';
import { startJobsApp } from './jobs-app.js';
import type { JobsApp } from './jobs-app.js';

/** The `workerModule` the worker tests boot in their pool threads. */
export const WORKER_TASKS_MODULE = fileURLToPath(
  new URL('../fixtures/workers/worker-tasks.module.ts', import.meta.url),
);

/**
 * The `workerExecArgv` of every test that starts pool threads: the library runs from its
 * TypeScript sources here, and ts-jest transforms only Jest's own modules, so each thread needs the
 * repository's loader.
 */
export const THREAD_LOADER_EXEC_ARGV = [
  '--import',
  fileURLToPath(new URL('../../tools/ts-loader/register.mjs', import.meta.url)),
];

/** An instance whose pool threads boot `WORKER_TASKS_MODULE`, polling briskly. */
export function startWorkerApp(
  url: string,
  options: Partial<JobsModuleOptions> = {},
): Promise<JobsApp> {
  return startJobsApp(url, {
    options: {
      workerModule: WORKER_TASKS_MODULE,
      workerExecArgv: THREAD_LOADER_EXEC_ARGV,
      pollingCheck: 0.2,
      ...options,
    },
  });
}
