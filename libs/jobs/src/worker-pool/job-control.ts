/**
 * The shared memory of one job handed to a pool thread: what the main thread and the thread must
 * see at once, without a message. A batch's jobs share one `SharedArrayBuffer`, `JOB_CONTROL_BYTES`
 * per job.
 *
 * - `started` leaves `STARTED_NO` once, and whoever moves it first decides: the thread starting
 *   the job (`STARTED_YES`, after writing `startedAt`), or the main thread taking it back before it
 *   started (`STARTED_WITHDRAWN`: the thread skips it). A started job then moves to `STARTED_ENDED`
 *   once its thread has sent its answer: from then on the answer is on its way, and the main thread
 *   must neither time the job out nor kill the thread over it, however long it takes to read it.
 * - `signal` is written by the main thread to abort the job (a reason code), or by the thread once
 *   the job ended (`SIGNAL_ENDED`, which releases the thread's own wait for an abort).
 * - `startedAt` is when the thread started the job, on the process's monotonic clock (`nowMs`),
 *   which every thread shares: the job's `taskTimeout` counts from there.
 */
const JOB_CONTROL_BYTES = 16;

const SIGNAL = 0;
const STARTED = 1;
/** In `Float64Array` elements, after the two int32 slots. */
const STARTED_AT = 1;

const STARTED_NO = 0;
const STARTED_YES = 1;
const STARTED_WITHDRAWN = 2;
const STARTED_ENDED = 3;

export const SIGNAL_NONE = 0;
export const SIGNAL_TIMEOUT = 1;
export const SIGNAL_SHUTDOWN = 2;
const SIGNAL_ENDED = 3;
export const SIGNAL_CANCELLED = 4;

/** `Atomics.waitAsync` (Node 16+), missing from the ES2023 typings this repo compiles against. */
const waitAsync = (
  Atomics as unknown as {
    waitAsync(
      array: Int32Array,
      index: number,
      value: number,
    ): { async: boolean; value: Promise<string> | string };
  }
).waitAsync;

/** Milliseconds on the monotonic clock every thread of the process shares (`performance.now()` does not: each thread has its own origin). */
export function nowMs(): number {
  const [seconds, nanoseconds] = process.hrtime();
  return seconds * 1000 + nanoseconds / 1e6;
}

export class JobControl {
  private readonly ints: Int32Array;
  private readonly floats: Float64Array;

  constructor(buffer: SharedArrayBuffer, slot: number) {
    this.ints = new Int32Array(buffer, slot * JOB_CONTROL_BYTES, 2);
    this.floats = new Float64Array(buffer, slot * JOB_CONTROL_BYTES, 2);
  }

  /** A buffer for the control slots of `jobs` jobs. */
  static buffer(jobs: number): SharedArrayBuffer {
    return new SharedArrayBuffer(jobs * JOB_CONTROL_BYTES);
  }

  /** The thread's side: starts the job unless the main thread took it back first. */
  claimStart(): boolean {
    this.floats[STARTED_AT] = nowMs();
    // The compare-exchange publishes `startedAt` to whoever then reads `started` as started.
    return Atomics.compareExchange(this.ints, STARTED, STARTED_NO, STARTED_YES) === STARTED_NO;
  }

  /** The main thread's side: takes the job back unless its thread started it first. */
  withdraw(): boolean {
    return (
      Atomics.compareExchange(this.ints, STARTED, STARTED_NO, STARTED_WITHDRAWN) === STARTED_NO
    );
  }

  /** When the thread started the job (`nowMs`), if it has. */
  startedAt(): number | undefined {
    const started = Atomics.load(this.ints, STARTED);
    return started === STARTED_YES || started === STARTED_ENDED
      ? this.floats[STARTED_AT]
      : undefined;
  }

  /** The main thread's side: the job's thread has sent its answer. */
  hasEnded(): boolean {
    return Atomics.load(this.ints, STARTED) === STARTED_ENDED;
  }

  /** The main thread's side: asks the thread to abort the job, for the reason `code` says. */
  abort(code: number): void {
    Atomics.store(this.ints, SIGNAL, code);
    Atomics.notify(this.ints, SIGNAL);
  }

  /** The thread's side: the abort asked for, if any, else `SIGNAL_NONE`. */
  abortCode(): number {
    const code = Atomics.load(this.ints, SIGNAL);
    return code === SIGNAL_ENDED ? SIGNAL_NONE : code;
  }

  /** The thread's side: resolves once an abort is asked for, or the job has ended. */
  async whenSignalled(): Promise<void> {
    const waiting = waitAsync(this.ints, SIGNAL, SIGNAL_NONE);
    if (waiting.async) await waiting.value;
  }

  /**
   * The thread's side, once the job's answer is sent: says so to the main thread (`hasEnded`), and
   * releases the job's wait for an abort, if it had one.
   */
  ended(): void {
    Atomics.store(this.ints, STARTED, STARTED_ENDED);
    if (Atomics.compareExchange(this.ints, SIGNAL, SIGNAL_NONE, SIGNAL_ENDED) === SIGNAL_NONE) {
      Atomics.notify(this.ints, SIGNAL);
    }
  }
}
