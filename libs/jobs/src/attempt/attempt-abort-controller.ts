/**
 * How an attempt is stopped early (its timeout, or shutdown): an `AbortController` whose signal is
 * only made if someone asks for it.
 *
 * Most tasks never look at `ctx.signal`, so an `AbortController` per attempt (with the listener
 * that settles the attempt on abort) would be paid by every attempt for the few that read it (see
 * "What made the hot path fast" in docs/performance.md). The runner's own reaction to an abort is
 * a plain callback instead; the signal, once asked for, behaves as any other (it is aborted at
 * once if the attempt already was).
 */
export class AttemptAbortController {
  private controller?: AbortController;
  private abortedWith?: { readonly reason: unknown };
  /** A `Set`, not an array literal: see "Memory" in docs/performance.md. */
  private listeners?: Set<(reason: unknown) => void>;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortedWith) this.controller.abort(this.abortedWith.reason);
    }
    return this.controller.signal;
  }

  /** Aborts once: later calls keep the first reason. */
  abort(reason: unknown): void {
    if (this.abortedWith) return;
    this.abortedWith = { reason };
    this.controller?.abort(reason);
    const listeners = this.listeners;
    this.listeners = undefined;
    listeners?.forEach((listener) => listener(reason));
  }

  /**
   * Calls `listener` with the reason on abort, at once if already aborted. Returns the function
   * that unregisters it.
   */
  onAbort(listener: (reason: unknown) => void): () => void {
    if (this.abortedWith) {
      listener(this.abortedWith.reason);
      return () => undefined;
    }
    (this.listeners ??= new Set()).add(listener);
    return () => this.listeners?.delete(listener);
  }
}
