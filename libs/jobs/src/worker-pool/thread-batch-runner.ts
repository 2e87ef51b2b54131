import { JobControl } from './job-control.js';
import type { WorkerBatchRequest, WorkerJobAnswer, WorkerJobRequest } from './worker-protocol.js';

/** Runs one job whose start is claimed, and says how it ended; never rejects. */
export type RunJob = (job: WorkerJobRequest, control: JobControl) => Promise<WorkerJobAnswer>;

/**
 * A job ran this long or less, the last time its task ran on this thread: the answers of the jobs
 * before it may wait for it, to go back in one message with its own.
 */
export const SHORT_TASK_MS = 1;

/**
 * A batch's count of jobs not yet ended or skipped. This and `Queued` are classes, not object
 * literals, as they live as long as an attempt: see "Memory" in docs/performance.md.
 */
class Batch {
  constructor(
    public remaining: number,
    readonly done: () => void,
  ) {}
}

class Queued {
  constructor(
    readonly job: WorkerJobRequest,
    readonly control: JobControl,
    readonly batch: Batch,
  ) {}
}

/**
 * A pool thread's side of the batches it is handed: it starts their jobs one at a time, in order
 * (a thread runs one job at a time, so CPU-bound tasks get a thread each, and a thread's death ends
 * the one job it was running), and skips those the main thread took back before they started.
 *
 * Answers go back together: those of the jobs that ended in one turn of the thread's event loop in
 * one message, so that the runner hears of a batch of short jobs at once and claims their slots
 * again in one claim. An answer waits for the next job only when that job's task was short the
 * last time it ran here (`SHORT_TASK_MS`); before any other job the answers waiting are sent, so a
 * long job neither delays them nor loses them if the thread dies under it.
 *
 * A batch settles (its poolifier task answers, after its jobs' answers on the same port) once each
 * of its jobs ended or was skipped.
 */
export class ThreadBatchRunner {
  private readonly queue: Queued[] = [];
  private running = false;
  private answers: WorkerJobAnswer[] = [];
  private ended: Batch[] = [];
  private flushScheduled = false;
  /** How long each task took the last time it ran here, in ms. */
  private readonly lastRunMs = new Map<string, number>();

  constructor(
    private readonly runJob: RunJob,
    private readonly send: (answers: readonly WorkerJobAnswer[]) => void,
  ) {}

  run({ jobs, control }: WorkerBatchRequest): Promise<void> {
    return new Promise<void>((done) => {
      if (jobs.length === 0) return done();
      const batch = new Batch(jobs.length, done);
      for (const job of jobs)
        this.queue.push(new Queued(job, new JobControl(control, job.slot), batch));
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    for (let next = this.queue.shift(); next; next = this.queue.shift()) {
      const { job, control, batch } = next;
      if (this.answers.length > 0 && !this.isShort(job.task)) this.flush();
      if (control.claimStart()) {
        const startedAt = performance.now();
        this.answers.push(await this.runJob(job, control));
        this.lastRunMs.set(job.task, performance.now() - startedAt);
      }
      if (--batch.remaining === 0) this.ended.push(batch);
      this.flushSoon();
    }
    this.running = false;
  }

  private isShort(task: string): boolean {
    return (this.lastRunMs.get(task) ?? Infinity) <= SHORT_TASK_MS;
  }

  /** Sends at the end of this turn, with whatever else ends in it. */
  private flushSoon(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.answers.length > 0) {
      const answers = this.answers;
      this.answers = [];
      this.send(answers);
    }
    for (const batch of this.ended.splice(0)) batch.done();
  }
}
