import type { AttemptAbortController } from '../attempt/attempt-abort-controller.js';
import type { ProgressState } from './attempt-progress.js';
import type { ClaimedJob } from './runner.sql.js';

/** An attempt this instance claimed and has not written the ending of yet. */
export interface RunningAttempt {
  readonly job: ClaimedJob;
  readonly controller: AttemptAbortController;
  /** Set when shutdown gave the attempt back: its own ending is then no longer ours to write. */
  released: boolean;
  /** Set when a cancel ended the attempt in the database: it has no ending of its own to write. */
  cancelled: boolean;
  /** The attempt's outcome is known (its task settled, or it was aborted): only its write is left. */
  ended: boolean;
  /** Its progress, once its task reported some. */
  progress?: ProgressState;
}

/**
 * The attempts whose ending is not written yet: what the claim loop bounds and gives back after a
 * lost claim reply, what shutdown drains, and where a cancel finds the attempt it aborts.
 *
 * Attempts are held one entry each, never one per job: after a reaper requeued a job whose attempt
 * is still running here, this instance may claim the next attempt while the old one ends. They are
 * kept by job id, so that a cancel finds its attempt without a scan, at no more cost per attempt
 * than a set; the rare older attempt of a job that runs again here waits aside.
 */
export class RunningAttempts {
  private readonly latest = new Map<string, RunningAttempt>();
  private readonly older = new Set<RunningAttempt>();
  private idle?: () => void;

  get size(): number {
    return this.latest.size + this.older.size;
  }

  add(attempt: RunningAttempt): void {
    const previous = this.latest.get(attempt.job.id);
    if (previous) this.older.add(previous);
    this.latest.set(attempt.job.id, attempt);
  }

  delete(attempt: RunningAttempt): void {
    if (this.latest.get(attempt.job.id) === attempt) this.latest.delete(attempt.job.id);
    else this.older.delete(attempt);
    if (this.size === 0) this.idle?.();
  }

  /** Attempt `attempt` of job `id`, if it runs here. */
  find(id: string, attempt: number): RunningAttempt | undefined {
    const latest = this.latest.get(id);
    if (latest?.job.attempt === attempt) return latest;
    if (this.older.size === 0) return undefined;
    return [...this.older].find((older) => older.job.id === id && older.job.attempt === attempt);
  }

  *values(): IterableIterator<RunningAttempt> {
    yield* this.latest.values();
    yield* this.older;
  }

  /** Resolves once no attempt is left, or after `ms`, whichever comes first. */
  whenEmpty(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.idle = () => {
        clearTimeout(timer);
        resolve();
      };
      if (this.size === 0) this.idle();
    });
  }
}
