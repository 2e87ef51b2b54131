import { BroadcastChannel, threadId } from 'node:worker_threads';
import type { StepStore } from '../steps/step-store.js';

/**
 * Durable steps in pool threads: a thread has no database, so its `StepStore` is the main
 * thread's, reached by messages. Both sides of that are here: the thread posts each call on
 * `<channel>:calls` with a key of its own, and the main thread answers it on `<channel>:answers`,
 * which every thread hears and each filters by key. Steps are few next to jobs: broadcast costs
 * nothing that matters, and needs no port handed to each thread.
 */

/** One call of a `StepStore` method, made in a thread. */
interface StepStoreCall {
  readonly key: string;
  readonly method: keyof StepStore;
  readonly args: unknown[];
}

/** The main thread's answer to a `StepStoreCall`: its value, or the message of what it threw. */
interface StepStoreAnswer {
  readonly key: string;
  readonly value?: unknown;
  readonly error?: string;
}

/** Main thread: answers the threads' calls with `store`. Returns what closes the channels. */
export function serveThreadStepCalls(channel: string, store: StepStore): () => void {
  const calls = new BroadcastChannel(`${channel}:calls`);
  const answers = new BroadcastChannel(`${channel}:answers`);
  calls.onmessage = (event) => {
    const { key, method, args } = (event as { data: StepStoreCall }).data;
    void (store[method] as (...args: unknown[]) => Promise<unknown>).apply(store, args).then(
      (value) => answers.postMessage({ key, value } satisfies StepStoreAnswer),
      (err: unknown) =>
        answers.postMessage({
          key,
          error: (err as Error)?.message ?? String(err),
        } satisfies StepStoreAnswer),
    );
  };
  // The pool's threads keep the process alive while they run; the channels must not on their own.
  calls.unref();
  answers.unref();
  return () => {
    calls.close();
    answers.close();
  };
}

/** Thread: a `StepStore` whose every call is answered by the main thread's. */
export class ThreadStepStore implements StepStore {
  private readonly calls: BroadcastChannel;
  private readonly answers: BroadcastChannel;
  private readonly pending = new Map<
    string,
    { resolve(value: unknown): void; reject(err: Error): void }
  >();
  private count = 0;

  constructor(channel: string) {
    this.calls = new BroadcastChannel(`${channel}:calls`);
    this.answers = new BroadcastChannel(`${channel}:answers`);
    this.answers.onmessage = (event) => {
      const { key, value, error } = (event as { data: StepStoreAnswer }).data;
      const waiting = this.pending.get(key);
      if (!waiting) return;
      this.pending.delete(key);
      if (error === undefined) waiting.resolve(value);
      else waiting.reject(new Error(error));
    };
    this.calls.unref();
    this.answers.unref();
  }

  load(...args: Parameters<StepStore['load']>) {
    return this.call('load', args) as ReturnType<StepStore['load']>;
  }

  write(...args: Parameters<StepStore['write']>) {
    return this.call('write', args) as ReturnType<StepStore['write']>;
  }

  findEvent(...args: Parameters<StepStore['findEvent']>) {
    return this.call('findEvent', args) as ReturnType<StepStore['findEvent']>;
  }

  jobOutcomes(...args: Parameters<StepStore['jobOutcomes']>) {
    return this.call('jobOutcomes', args) as ReturnType<StepStore['jobOutcomes']>;
  }

  private call(method: keyof StepStore, args: unknown[]): Promise<unknown> {
    const key = `${threadId}:${++this.count}`;
    return new Promise((resolve, reject) => {
      this.pending.set(key, { resolve, reject });
      this.calls.postMessage({ key, method, args } satisfies StepStoreCall);
    });
  }
}
