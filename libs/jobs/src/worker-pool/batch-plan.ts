/** What the plan needs to know of a pool thread. */
export interface ThreadLoad {
  /** It has booted and takes tasks (poolifier's `ready`). */
  readonly ready: boolean;
  /** It has a batch in flight. */
  readonly busy: boolean;
}

/**
 * How the calls waiting in the main thread go out now: the sizes of the batches to send, in
 * order, each to the thread poolifier then chooses (its default strategy, least used: the first
 * idle thread, and, once every thread is busy, a thread it adds).
 *
 * A batch goes only to an idle thread, or to the thread the pool adds when every thread is busy and
 * it may grow (one per plan): a busy thread would start it only after the batch it runs, and a
 * booting replacement of a dead thread takes nothing until it is ready. The waiting calls are
 * shared evenly between those threads, earlier batches taking the odd ones: what one thread is
 * given that another could start sooner is taken back later (`pickSteal`).
 */
export function planBatches(
  threads: readonly ThreadLoad[],
  waiting: number,
  maxThreads: number,
): number[] {
  const idle = threads.filter((thread) => thread.ready && !thread.busy).length;
  const grows =
    waiting > idle &&
    threads.length > 0 &&
    threads.length < maxThreads &&
    threads.every((thread) => thread.ready);
  const batches = Math.min(waiting, idle + (grows ? 1 : 0));
  return Array.from(
    { length: batches },
    (_, i) => Math.floor(waiting / batches) + (i < waiting % batches ? 1 : 0),
  );
}

/** A call sent to a thread that has not started it. */
export interface Unstarted {
  /** Arrival order of the call. */
  readonly seq: number;
  readonly thread: number;
}

/**
 * What an idle thread takes back from the others when nothing waits in the main thread: half,
 * rounded up, of the unstarted calls of the thread holding the oldest one, oldest first. That
 * thread is running something else, or still booting; the idle one starts them at once.
 */
export function pickSteal<T extends Unstarted>(unstarted: readonly T[]): T[] {
  if (unstarted.length === 0) return [];
  const oldest = unstarted.reduce((a, b) => (b.seq < a.seq ? b : a));
  const victims = unstarted
    .filter((call) => call.thread === oldest.thread)
    .sort((a, b) => a.seq - b.seq);
  return victims.slice(0, Math.ceil(victims.length / 2));
}
