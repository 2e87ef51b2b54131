import { JobControl } from './job-control.js';
import type { WorkerBatchRequest, WorkerJobAnswer, WorkerJobRequest } from './worker-protocol.js';

/** Runs one job whose start is claimed, and says how it ended; never rejects. */
export type RunJob = (job: WorkerJobRequest, control: JobControl) => Promise<WorkerJobAnswer>;

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
 * Each job's answer is sent as soon as the job ended, before the next job starts: the next one may
 * hold the thread's CPU for as long as its own timeout allows (what worker tasks are for), and an
 * answer held back behind it would outlive the ended job's timeout, or be lost with the thread. The
 * answer sent, the job's control slot says it ended (`JobControl.ended`), which the main thread
 * reads before it times a job out or kills its thread. The runner still gathers the answers it
 * reads in one turn of its own loop: it claims their slots again, and writes their endings,
 * together, on the next.
 *
 * A batch settles (its poolifier task answers, after its jobs' answers on the same port) once each
 * of its jobs ended or was skipped.
 */
export class ThreadBatchRunner {
  private readonly queue: Queued[] = [];
  private running = false;

  constructor(
    private readonly runJob: RunJob,
    private readonly send: (answer: WorkerJobAnswer) => void,
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
      if (control.claimStart()) {
        this.send(await this.runJob(job, control));
        control.ended();
      }
      if (--batch.remaining === 0) batch.done();
    }
    this.running = false;
  }
}
