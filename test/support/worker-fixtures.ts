import { fileURLToPath } from 'node:url';

/** The `workerModule` the worker tests boot in their pool threads. */
export const WORKER_TASKS_MODULE = fileURLToPath(
  new URL('../fixtures/workers/worker-tasks.module.ts', import.meta.url),
);
