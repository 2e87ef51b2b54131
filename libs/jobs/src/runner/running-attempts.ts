import { AttemptAbortController } from '../attempt/attempt-abort-controller.js';
import type { ProgressState } from './attempt-progress.js';
import type { ClaimedJob } from './claim.sql.js';

/**
 * An attempt this instance claimed and has not written the ending of yet. A class, not an object
 * literal: see "Memory" in docs/performance.md.
 */
export class RunningAttempt {
  readonly controller = new AttemptAbortController();
  /** Set when shutdown gave the attempt back: its own ending is then no longer ours to write. */
  released = false;
  /** Set when a cancel ended the attempt in the database: it has no ending of its own to write. */
  cancelled = false;
  /** The attempt's outcome is known (its task settled, or it was aborted): only its write is left. */
  ended = false;
  /** Its progress, once its task reported some. */
  progress?: ProgressState;

  constructor(readonly job: ClaimedJob) {}
}

/**
 * The attempts whose ending is not written yet: what the claim loop bounds and gives back after a
 * lost claim reply, what shutdown drains, and where a cancel finds the attempt it aborts.
 *
 * A list, not a `Map` by job id: a table that every attempt adds to and deletes from is rebuilt
 * every few dozen attempts, and V8 keeps each table it replaces, with the attempts it held, until
 * its next full collection, so that every attempt reached the old generation (see "Memory" in
 * docs/performance.md). `concurrency` bounds the list: a removal scans it from the oldest attempt,
 * the likeliest to end first, and a cancel (rare) scans it too. After a reaper requeued a job whose
 * attempt still runs here, this instance may claim the job's next attempt while the old one ends:
 * both are held, as any two attempts.
 */
export class RunningAttempts {
  private readonly attempts: RunningAttempt[] = [];
  private idle?: () => void;

  get size(): number {
    return this.attempts.length;
  }

  add(attempt: RunningAttempt): void {
    this.attempts.push(attempt);
  }

  delete(attempt: RunningAttempt): void {
    const index = this.attempts.indexOf(attempt);
    if (index < 0) return;
    this.attempts.splice(index, 1);
    if (this.attempts.length === 0) this.idle?.();
  }

  /** The attempt of claim `claim` (see `ClaimedJob.claim`) of job `id`, if it runs here. */
  find(id: string, claim: string): RunningAttempt | undefined {
    return this.attempts.find((running) => running.job.id === id && running.job.claim === claim);
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
      if (this.attempts.length === 0) this.idle();
    });
  }
}
