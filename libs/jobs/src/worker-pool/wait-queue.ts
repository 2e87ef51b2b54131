interface Waiting {
  readonly send: () => void;
  readonly reject: (reason: unknown) => void;
  readonly signal?: AbortSignal;
  readonly onAbort: () => void;
}

/**
 * Calls waiting for a pool thread, first come, first served: only the oldest call may be sent, so
 * a call that arrives as a thread frees can never overtake one that was already waiting.
 *
 * It waits on events, not a clock: whoever changes what `free` answers calls `serve()`. The one
 * timer, a re-check every `recheckMs` while a call waits, is a safety net for a change that no
 * event announced; `missedWake` hears when that net sent something, which points at the gap.
 */
export class WaitQueue {
  private readonly waiting = new Map<object, Waiting>();
  private recheck?: NodeJS.Timeout;

  constructor(
    private readonly free: () => boolean,
    private readonly recheckMs: number,
    private readonly missedWake: (sent: number) => void,
  ) {}

  /**
   * Queues `send` behind every call already waiting, and settles with what it returns once it has
   * been sent. A `signal` aborted while the call waits takes it out of the queue, rejected with the
   * signal's reason; `key` identifies it to `withdraw`.
   */
  enqueue<T>(key: object, send: () => T, signal?: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => this.withdraw(key, () => signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.set(key, { send: () => resolve(send()), reject, signal, onAbort });
      this.serve();
    });
  }

  /** Sends the oldest waiting calls while `free` says a thread can take one. */
  serve(): number {
    let sent = 0;
    // A Map iterates in insertion order: the first entry is the oldest call.
    for (const [key, call] of this.waiting) {
      if (!this.free()) break;
      this.remove(key, call);
      call.send();
      sent++;
    }
    this.armRecheck();
    return sent;
  }

  /**
   * Takes a call out of the queue (it settled otherwise, or was aborted), rejecting it. The reason
   * is made only for a call still waiting: every call passes here once it has settled.
   */
  withdraw(key: object, reason: () => unknown): void {
    const call = this.waiting.get(key);
    if (!call) return;
    this.remove(key, call);
    call.reject(reason());
    this.armRecheck();
  }

  /** Rejects every waiting call: the pool is stopping. */
  rejectAll(reason: () => unknown): void {
    for (const key of [...this.waiting.keys()]) this.withdraw(key, reason);
  }

  private remove(key: object, call: Waiting): void {
    this.waiting.delete(key);
    call.signal?.removeEventListener('abort', call.onAbort);
  }

  private armRecheck(): void {
    if (this.waiting.size === 0) {
      clearTimeout(this.recheck);
      this.recheck = undefined;
    } else if (!this.recheck) {
      this.recheck = setTimeout(() => {
        this.recheck = undefined;
        const sent = this.serve();
        if (sent > 0) this.missedWake(sent);
      }, this.recheckMs);
      // Waiting calls keep their callers' promises pending; the net alone must not keep a process up.
      this.recheck.unref();
    }
  }
}
