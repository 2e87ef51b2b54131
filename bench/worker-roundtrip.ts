/**
 * `npm run bench:workers`: what running a task in the worker pool costs over running it in-process,
 * both measured in this one process run, as a ratio. Two levels:
 * - dispatch: `WorkerPool.run()` of a no-op worker task against `runWithTimeout()` of a no-op
 *   handler (what the runner does for each), one call at a time, and ten at once (what a claim of
 *   ten hands over: one batch, one message each way);
 * - end to end: `addJob({ promise: true })` of a no-op worker task against a no-op in-process task,
 *   one job at a time, through PostgreSQL (claim, run, record, notify).
 * Each figure is the median of REPETITIONS runs, the two sides' runs interleaved.
 */
import 'reflect-metadata';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JobQueueService, JobTask, JobsModule } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { createDatabase, resolveDatabaseServer } from '../tools/dev-database.js';
import {
  AttemptAbortController,
  resolveJobsOptions,
  runWithTimeout,
  WorkerPool,
} from './internals.js';
import { summarise } from './stats.js';
import type { StepStore } from '../libs/jobs/src/steps/step-store.js';

const REPETITIONS = 5;
const DISPATCHES = 2_000;
const JOBS = 200;
const WORKER_MODULE = fileURLToPath(new URL('./worker-noop.module.ts', import.meta.url));

@JobTask('bench.noop')
@Injectable()
class NoopTask implements JobTaskHandler {
  run(): void {}
}

@Module({ providers: [NoopTask] })
class NoopModule {}

const job = (task: string) => ({
  id: 'bench',
  task,
  payload: {},
  attempt: 1,
  maxRetries: 0,
  claim: '1',
});

/** Microseconds per call of `fn`, `count` calls one after another. */
async function perCall(count: number, fn: () => Promise<unknown>): Promise<number> {
  const startedAt = performance.now();
  for (let i = 0; i < count; i++) await fn();
  return ((performance.now() - startedAt) * 1000) / count;
}

/** `fn` made to run `n` calls at once, as one call of `perCall`; divide its figure by `n`. */
const atOnce =
  (n: number, fn: () => Promise<unknown>): (() => Promise<unknown>) =>
  () =>
    Promise.all(Array.from({ length: n }, fn));

/**
 * Medians of REPETITIONS runs of each side, the runs interleaved so that both sides see the same
 * machine and the same database (whose history table grows as the bench goes).
 */
async function mediansOf(
  worker: () => Promise<number>,
  inProcess: () => Promise<number>,
): Promise<[number, number]> {
  const runs: [number[], number[]] = [[], []];
  for (let i = 0; i < REPETITIONS; i++) {
    runs[0].push(await worker());
    runs[1].push(await inProcess());
  }
  return [summarise(runs[0]).median, summarise(runs[1]).median];
}

const AT_ONCE = 10;

/** A step store for tasks that take no step: every call refuses. */
const NO_STEPS: StepStore = {
  load: () => Promise.reject(new Error('no durable steps in this bench')),
  write: () => Promise.reject(new Error('no durable steps in this bench')),
  findEvent: () => Promise.reject(new Error('no durable steps in this bench')),
  jobOutcomes: () => Promise.reject(new Error('no durable steps in this bench')),
};

async function dispatchLevels(): Promise<[[number, number], [number, number]]> {
  const options = resolveJobsOptions({
    connection: 'postgres://unused',
    workers: 1,
    workerModule: WORKER_MODULE,
  });
  const pool = new WorkerPool(options);
  // The bench's tasks take no durable step: nothing asks the store.
  await pool.start(NO_STEPS);
  try {
    const worker = () => pool.run(job('bench.workerNoop'), 60, new AttemptAbortController());
    const inProcess = () => runWithTimeout(Promise.resolve(), 60, new AttemptAbortController());
    await perCall(200, worker);
    const oneByOne = await mediansOf(
      () => perCall(DISPATCHES, worker),
      () => perCall(DISPATCHES, inProcess),
    );
    const perTask = async (fn: () => Promise<unknown>) =>
      (await perCall(DISPATCHES / AT_ONCE, atOnce(AT_ONCE, fn))) / AT_ONCE;
    const together = await mediansOf(
      () => perTask(worker),
      () => perTask(inProcess),
    );
    return [oneByOne, together];
  } finally {
    await pool.stop();
  }
}

async function endToEnd(url: string): Promise<[number, number]> {
  const app = await NestFactory.createApplicationContext(
    {
      module: NoopModule,
      imports: [JobsModule.forRoot({ connection: url, workers: 1, workerModule: WORKER_MODULE })],
    },
    { logger: ['error'] },
  );
  try {
    const queue = app.get(JobQueueService);
    const roundTrip = (task: string) => async () =>
      (await queue.addJob({ task, promise: true })).promise;
    await perCall(20, roundTrip('bench.workerNoop'));
    return await mediansOf(
      () => perCall(JOBS, roundTrip('bench.workerNoop')),
      () => perCall(JOBS, roundTrip('bench.noop')),
    );
  } finally {
    await app.close();
  }
}

const server = await resolveDatabaseServer(
  join(tmpdir(), 'nestjs-pg-jobs-bench', `pg-${process.pid}`),
);
const db = await createDatabase(server.url, 'jobs_bench_workers');
try {
  const [oneByOne, together] = await dispatchLevels();
  const rows = [
    ['dispatch (pool.run vs runWithTimeout)', ...oneByOne],
    [`dispatch, ${AT_ONCE} at once`, ...together],
    ['end to end (addJob promise, one at a time)', ...(await endToEnd(db.url))],
  ] as const;
  console.log(`Worker task round trip vs in-process (median of ${REPETITIONS} runs, µs per task):`);
  console.table(
    rows.map(([level, worker, inProcess]) => ({
      level,
      'worker µs': Math.round(worker),
      'in-process µs': Math.round(inProcess * 10) / 10,
      ratio: `${(worker / inProcess).toFixed(1)}x`,
    })),
  );
} finally {
  await db.drop();
  await server.stop();
}
