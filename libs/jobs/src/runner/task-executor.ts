import type { Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { endingOfReturn, endingOfThrow } from '../attempt/attempt-ending.js';
import type { AttemptEnding } from '../attempt/attempt-ending.js';
import { createJobContext } from '../attempt/job-context.js';
import type { ContextSources } from '../attempt/job-context.js';
import { runWithTimeout } from '../attempt/run-with-timeout.js';
import type { JobsDatabase } from '../database/jobs-database.js';
import type { JobBackoff } from '../discovery/job-task.interfaces.js';
import type { TaskRegistry } from '../discovery/task-registry.js';
import type { ResolvedJobsOptions } from '../options/resolved-options.js';
import { runWithSchemas } from '../task-schemas/task-schemas.js';
import type { WorkerPool } from '../worker-pool/worker-pool.js';
import { fromThread } from '../worker-pool/worker-dispatcher.js';
import type { WorkerJobOutcome } from '../worker-pool/worker-protocol.js';
import type { DependencyReader } from '../job-queue/dependency-reader.js';
import type { JobDependencies } from '../discovery/job-task.interfaces.js';
import { JobSuspension } from '../errors/jobs.errors.js';
import { StepMemo } from '../steps/step-memo.js';
import { stepsSql } from '../steps/steps.sql.js';
import { DatabaseStepStore } from '../steps/step-store.js';
import type { RunningAttempt } from './running-attempts.js';
import { TaskTransaction } from './task-transaction.js';

/**
 * What running one attempt's task came to. A class, as are the other objects every attempt makes
 * here, not an object literal: see "Memory" in docs/performance.md.
 */
export class TaskOutcome {
  constructor(
    readonly ending: AttemptEnding,
    /**
     * An in-process task that was aborted (timeout, shutdown) and has not settled: it cannot be
     * stopped, so it keeps its slot until it does.
     */
    readonly stray?: Promise<void>,
    /** A `transactional` task's transaction, open, for its completion or snooze to be written in. */
    readonly transaction?: TaskTransaction,
  ) {}
}

/**
 * Runs an attempt's task under its timeout, in-process or in the worker pool, and says how it
 * ended: it never throws, since a task's failure is recorded on the job and must not escape into
 * the loop. `progress` hears what the task reports.
 */
export class TaskExecutor {
  constructor(
    private readonly options: ResolvedJobsOptions,
    private readonly db: JobsDatabase,
    private readonly registry: TaskRegistry,
    private readonly workerPool: WorkerPool,
    private readonly progress: (attempt: RunningAttempt, json: string) => void,
    private readonly dependencies: DependencyReader,
    private readonly logger: Logger,
  ) {
    this.steps = new DatabaseStepStore(db, stepsSql(db.schema));
  }

  private readonly steps: DatabaseStepStore;

  /** The durable steps of `attempt` (made once it calls one). */
  private readonly stepMemo = ({ job }: RunningAttempt): StepMemo =>
    new StepMemo(
      this.steps,
      { id: job.id, attempt: job.attempt, claim: job.claim },
      this.options.maxResultBytes,
    );

  async run(attempt: RunningAttempt): Promise<TaskOutcome> {
    const { job } = attempt;
    const task = this.registry.get(job.task);
    if (!task) {
      const error = new Error(
        `No handler for task "${job.task}" on instance ${this.options.instanceId}.`,
      );
      return new TaskOutcome(this.threw(attempt, error));
    }
    const timeout = task.options.timeout ?? this.options.taskTimeout;
    const { handler, options } = task;
    // A worker task's handler lives in the pool threads, which stop a thread that does not answer.
    if (!handler) return this.runInThread(attempt, timeout);
    let transaction: TaskTransaction | undefined;
    try {
      if (options.transactional) transaction = await TaskTransaction.begin(this.db);
    } catch (err) {
      return new TaskOutcome(this.threw(attempt, err));
    }
    const { controller } = attempt;
    const sources = new AttemptSources(
      attempt,
      this.progress,
      this.dependencies,
      transaction,
      this.stepMemo,
    );
    const ctx = createJobContext(job, sources);
    let settled = false;
    // Through a promise, so that a task that throws synchronously rejects like one that rejects.
    // A task with a schema has its payload parsed and its result checked, inside its timeout.
    const running =
      options.payloadSchema || options.resultSchema
        ? runWithSchemas(job.task, options, job.payload, (payload) => handler.run(payload, ctx))
        : Promise.resolve().then(() => handler.run(job.payload, ctx));
    // Registered before runWithTimeout's reaction, so it has run when that one settles; a reaction,
    // not a .finally() in the chain, which cost each attempt three more promises.
    const markSettled = () => (settled = true);
    void running.then(markSettled, markSettled);
    let ending: AttemptEnding;
    try {
      ending = endingOfReturn(
        await runWithTimeout(running, timeout, controller),
        this.options.maxResultBytes,
      );
    } catch (err) {
      ending = this.threw(attempt, err, options.backoff);
    }
    // A task that caught its step's suspension is suspended all the same: its wait is not over.
    const suspension = sources.suspension();
    if (suspension && ending.outcome !== 'suspended') ending = { outcome: 'suspended', suspension };
    if (!settled) {
      const stray = running.then(noop, noop);
      await transaction?.abandon(stray);
      return new TaskOutcome(ending, stray);
    }
    // A suspended attempt's writes outside its steps run again with the job: they roll back.
    if (ending.outcome === 'failed' || ending.outcome === 'suspended') {
      await transaction?.rollback();
      return new TaskOutcome(ending);
    }
    return new TaskOutcome(ending, undefined, transaction);
  }

  private async runInThread(attempt: RunningAttempt, timeout: number): Promise<TaskOutcome> {
    let outcome: WorkerJobOutcome;
    try {
      // A thread has no database: a flow job's dependencies go with it.
      const job = !attempt.job.inFlow
        ? attempt.job
        : { ...attempt.job, dependencies: await this.dependencies.read(attempt.job) };
      outcome = await this.workerPool.run(job, timeout, attempt.controller, (json) =>
        this.progress(attempt, json),
      );
    } catch (err) {
      // The thread died, did not answer, or the attempt was aborted: its backoff is out of reach.
      return new TaskOutcome(this.threw(attempt, err));
    }
    if (outcome.progress !== undefined) this.progress(attempt, outcome.progress);
    const { ending } = outcome;
    if (ending.outcome === 'failed')
      return new TaskOutcome({ ...ending, error: fromThread(ending.error) });
    if (ending.outcome !== 'suspended') return new TaskOutcome(ending);
    const { step, position, seconds, event, jobs } = ending.suspension;
    return new TaskOutcome({
      outcome: 'suspended',
      suspension: new JobSuspension(step, position, seconds, event, jobs),
    });
  }

  private threw({ job }: RunningAttempt, thrown: unknown, backoff?: JobBackoff): AttemptEnding {
    return endingOfThrow(thrown, job, backoff, (message) => this.logger.warn(message));
  }
}

/** What an in-process attempt's `JobContext` reads from the runner. */
class AttemptSources implements ContextSources {
  readonly manager?: EntityManager;

  private memo?: StepMemo;

  constructor(
    private readonly attempt: RunningAttempt,
    private readonly report: (attempt: RunningAttempt, json: string) => void,
    private readonly reader: DependencyReader,
    transaction: TaskTransaction | undefined,
    private readonly makeSteps: (attempt: RunningAttempt) => StepMemo,
  ) {
    this.manager = transaction?.manager;
  }

  steps(): StepMemo {
    return (this.memo ??= this.makeSteps(this.attempt));
  }

  /** The suspension a step of the attempt asked for, if any. */
  suspension(): JobSuspension | undefined {
    return this.memo?.suspension;
  }

  dependencies(): Promise<JobDependencies> {
    return this.reader.read(this.attempt.job);
  }

  signal(): AbortSignal {
    return this.attempt.controller.signal;
  }

  progress(json: string): void {
    this.report(this.attempt, json);
  }
}

function noop(): void {}
