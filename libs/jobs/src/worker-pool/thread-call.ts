import type { AttemptJob } from '../attempt/attempt-job.js';
import { nowMs } from './job-control.js';
import type { JobControl } from './job-control.js';
import type { WorkerJobOutcome, WorkerJobRequest } from './worker-protocol.js';

/**
 * One attempt handed to the pool, from the main thread's side: waiting for a thread, sent to one
 * (possibly again, after it was taken back from another thread, or its thread died before starting
 * it), then settled once, with the thread's answer or a failure.
 */
export class ThreadCall {
  state: 'waiting' | 'sent' | 'settled' = 'waiting';
  /** When it was handed over (`nowMs`). */
  readonly since = nowMs();
  /** Names the current send in the thread's answers. */
  key = 0;
  /** The current send's control slots. */
  control?: JobControl;
  /** The thread of the current send, once poolifier has chosen it. */
  thread?: number;
  readonly answer: Promise<WorkerJobOutcome>;
  private resolveAnswer!: (outcome: WorkerJobOutcome) => void;
  private rejectAnswer!: (err: Error) => void;

  constructor(
    /** Arrival order: calls are sent, and taken back, in this order. */
    readonly seq: number,
    readonly job: AttemptJob,
    readonly timeout: number,
  ) {
    this.answer = new Promise<WorkerJobOutcome>((resolve, reject) => {
      this.resolveAnswer = resolve;
      this.rejectAnswer = reject;
    });
    // Its caller may be gone (the attempt gave up) by the time a late failure comes.
    this.answer.catch(() => undefined);
  }

  /** Records a send under `key`, and returns the request the thread gets. */
  send(key: number, slot: number, control: JobControl): WorkerJobRequest {
    this.state = 'sent';
    this.thread = undefined;
    this.key = key;
    this.control = control;
    const { id, task, payload, attempt, maxRetries, claim, dependencies } = this.job;
    return {
      key,
      slot,
      id,
      task,
      payload,
      attempt,
      maxRetries,
      claim,
      timeout: this.timeout,
      ...(dependencies && { dependencies }),
    };
  }

  /** Back in the main thread's queue: taken back from its thread before it started. */
  requeued(): void {
    this.state = 'waiting';
    this.thread = undefined;
    this.control = undefined;
  }

  /** When a thread started the job (`nowMs`), if one has. */
  startedAt(): number | undefined {
    return this.state === 'sent' ? this.control!.startedAt() : undefined;
  }

  /**
   * Its thread has sent its answer (`JobControl.hasEnded`), which the main thread may not have read
   * yet: it is past timing out, and its thread must not be killed over it.
   */
  hasEnded(): boolean {
    return this.state === 'sent' && this.control!.hasEnded();
  }

  resolve(outcome: WorkerJobOutcome): void {
    if (this.state === 'settled') return;
    this.state = 'settled';
    this.resolveAnswer(outcome);
  }

  fail(err: Error): void {
    if (this.state === 'settled') return;
    this.state = 'settled';
    this.rejectAnswer(err);
  }
}
