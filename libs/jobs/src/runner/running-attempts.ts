import type { AttemptAbortController } from '../attempt/attempt-abort-controller.js';
import type { ProgressState } from './attempt-progress.js';
import type { ClaimedJob } from './runner.sql.js';

/** An attempt this instance claimed and has not written the ending of yet. */
export interface RunningAttempt {
  readonly job: ClaimedJob;
  readonly controller: AttemptAbortController;
  /** Set when shutdown gave the attempt back: its own ending is then no longer ours to write. */
  released: boolean;
  /** The attempt's outcome is known (its task settled, or it was aborted): only its write is left. */
  ended: boolean;
  /** Its progress, once its task reported some. */
  progress?: ProgressState;
}

/**
 * The attempts whose ending is not written yet: what the claim loop bounds and gives back after a
 * lost claim reply, and what shutdown drains.
 *
 * Attempts are held one entry each, never one per job: after a reaper requeued a job whose attempt
 * is still running here, this instance may claim the next attempt while the old one ends.
 */
export class RunningAttempts {
  private readonly attempts = new Set<RunningAttempt>();
  private idle?: () => void;

  get size(): number {
    return this.attempts.size;
  }

  add(attempt: RunningAttempt): void {
    this.attempts.add(attempt);
  }

  delete(attempt: RunningAttempt): void {
    this.attempts.delete(attempt);
    if (this.attempts.size === 0) this.idle?.();
  }

  values(): IterableIterator<RunningAttempt> {
    return this.attempts.values();
  }

  /** Resolves once no attempt is left, or after `ms`, whichever comes first. */
  whenEmpty(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.idle = () => {
        clearTimeout(timer);
        resolve();
      };
      if (this.attempts.size === 0) this.idle();
    });
  }
}
