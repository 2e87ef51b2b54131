/**
 * Calls waiting in the main thread for a pool thread, in arrival order (`seq`): first come, first
 * sent, and a call taken back from a thread goes back in its place, before every later arrival.
 *
 * It waits on events, not a clock: whoever may have freed a thread serves it. The one timer, a
 * re-check every `recheckMs` while a call waits, is a safety net for a change that no event
 * announced; `serve` returns how many calls it sent, and `missedWake` hears when the net sent
 * something, which points at the gap.
 */
export class CallQueue<T extends { readonly seq: number }> {
  private calls: T[] = [];
  private recheck?: NodeJS.Timeout;

  constructor(
    private readonly recheckMs: number,
    private readonly serve: () => number,
    private readonly missedWake: (sent: number) => void,
  ) {}

  get size(): number {
    return this.calls.length;
  }

  /** Adds an arrival, behind every call waiting. */
  push(call: T): void {
    this.calls.push(call);
    this.armRecheck();
  }

  /** Puts calls taken back from a thread back in their places. */
  requeue(calls: readonly T[]): void {
    if (calls.length === 0) return;
    this.calls = [...calls, ...this.calls].sort((a, b) => a.seq - b.seq);
    this.armRecheck();
  }

  /** Takes the `count` oldest calls out. */
  take(count: number): T[] {
    const taken = this.calls.splice(0, count);
    this.armRecheck();
    return taken;
  }

  /** Takes `call` out, if it waits here. */
  remove(call: T): boolean {
    const index = this.calls.indexOf(call);
    if (index < 0) return false;
    this.calls.splice(index, 1);
    this.armRecheck();
    return true;
  }

  private armRecheck(): void {
    if (this.calls.length === 0) {
      clearTimeout(this.recheck);
      this.recheck = undefined;
    } else if (!this.recheck) {
      this.recheck = setTimeout(() => {
        this.recheck = undefined;
        const sent = this.serve();
        if (sent > 0) this.missedWake(sent);
        this.armRecheck();
      }, this.recheckMs);
      // Waiting calls keep their callers' promises pending; the net alone must not keep a process up.
      this.recheck.unref();
    }
  }
}
