import { rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Injectable } from '@nestjs/common';
import type { Type } from '@nestjs/common';
import {
  InvalidModuleOptionError,
  InvalidTaskHandlerError,
  JobTask,
  UnknownTaskError,
  WorkerPoolBootError,
} from 'nestjs-pg-jobs';
import type { JobsModuleOptions } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { hangingWorkerUrlFile } from '../fixtures/workers/hanging-worker-url.js';
import {
  startWorkerApp,
  THREAD_LOADER_EXEC_ARGV,
  WORKER_TASKS_MODULE,
} from '../support/worker-fixtures.js';

const db = useTestDatabase();
const BROKEN_MODULE = fileURLToPath(
  new URL('../fixtures/workers/broken.module.ts', import.meta.url),
);
const HANGING_MODULE = fileURLToPath(
  new URL('../fixtures/workers/hanging.module.ts', import.meta.url),
);
/** The session `HANGING_MODULE` holds while its thread hangs (not imported: importing it hangs). */
const HANGING_WORKER_SESSION = 'hanging worker module';

const boot = (options: Partial<JobsModuleOptions>, tasks: Type[] = []) =>
  startJobsApp(db.url, { tasks, options: { workerExecArgv: THREAD_LOADER_EXEC_ARGV, ...options } });

describe('a bad worker option fails the boot with a message naming the option and the value', () => {
  it.each([
    [{ workerModule: '/nowhere/worker.module.js' }, /"workerModule" names no file/],
    [
      { workerModule: 42 },
      /"workerModule" must be the path of a file exporting a Nest module; got 42/,
    ],
    [{ workerTimeoutGrace: 0 }, /"workerTimeoutGrace" must be a positive number of seconds; got 0/],
    [
      { workerStartTimeout: -1 },
      /"workerStartTimeout" must be a positive number of seconds; got -1/,
    ],
    [
      { workerResourceLimits: { maxOldGenerationSizeMb: -1 } },
      /"workerResourceLimits" must be an object of positive numbers/,
    ],
    [
      { workerExecArgv: '--inspect' },
      /"workerExecArgv" must be an array of strings; got "--inspect"/,
    ],
  ])('%j', async (options, message) => {
    const attempt = boot(options as Partial<JobsModuleOptions>);
    await expect(attempt).rejects.toThrow(InvalidModuleOptionError);
    await expect(attempt).rejects.toThrow(message);
  });
});

it('fails the boot, with the cause, when the workerModule cannot boot in a thread', async () => {
  const attempt = boot({ workerModule: BROKEN_MODULE });
  await expect(attempt).rejects.toThrow(WorkerPoolBootError);
  await expect(attempt).rejects.toThrow(/the broken worker task cannot be built/);
}, 60_000);

it('fails the boot after workerStartTimeout, and stops its thread, when the workerModule never finishes loading', async () => {
  const hangingSessions = async () => {
    const [{ n }] = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = $1`,
      [HANGING_WORKER_SESSION],
    );
    return n;
  };
  writeFileSync(hangingWorkerUrlFile(), db.url);
  try {
    // Long enough for a thread to load the module under a busy machine: the session must show first.
    const attempt = boot({ workerModule: HANGING_MODULE, workerStartTimeout: 20 });
    attempt.catch(() => undefined);
    await waitFor('the worker module to hang', async () => (await hangingSessions()) === 1, 30_000);
    await expect(attempt).rejects.toThrow(WorkerPoolBootError);
    await expect(attempt).rejects.toThrow(
      /did not answer within workerStartTimeout \(20s\).*never finished loading/s,
    );
    await waitFor('the hanging thread to end', async () => (await hangingSessions()) === 0);
  } finally {
    rmSync(hangingWorkerUrlFile(), { force: true });
  }
}, 60_000);

it('fails the boot, saying to pass workerExecArgv, when threads would get no loader for the TypeScript sources', async () => {
  // Under Jest the library runs from its sources, and the process has no loader its threads inherit.
  const attempt = startJobsApp(db.url, { options: { workerModule: WORKER_TASKS_MODULE } });
  await expect(attempt).rejects.toThrow(WorkerPoolBootError);
  await expect(attempt).rejects.toThrow(/without a TypeScript loader.*"workerExecArgv"/);
});

@JobTask('worker.greet')
@Injectable()
class InProcessGreet {
  run() {}
}

it('fails the boot when an in-process task and a worker task share a name', async () => {
  const attempt = boot({ workerModule: WORKER_TASKS_MODULE }, [InProcessGreet]);
  await expect(attempt).rejects.toThrow(InvalidTaskHandlerError);
  await expect(attempt).rejects.toThrow(/Task "worker.greet" has two handlers/);
}, 60_000);

it('knows the worker task names on an instance that only enqueues, from the pool threads', async () => {
  const app = await startWorkerApp(db.url, { runJobs: false });
  try {
    const { id } = await app.queue.addJob({ task: 'worker.greet', payload: { name: 'later' } });
    expect((await app.queue.getJob(id))?.state).toBe('pending');
    await expect(app.queue.addJob({ task: 'worker.nope' })).rejects.toThrow(UnknownTaskError);
  } finally {
    await app.close();
  }
}, 60_000);
