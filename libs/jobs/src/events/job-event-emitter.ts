import type { JobWaitingFor } from '../steps/step-info.interface.js';
import { Injectable, Logger } from '@nestjs/common';
import { toError } from '../common/errors.js';
import type { JobEvent, SkipReason } from './job-event.interface.js';

type Listener = (event: JobEvent) => void;

/** The part of a job every event needs. */
interface JobRef {
  readonly id: string;
  readonly task: string;
  readonly queue: string;
}

/** The part of a claimed job an event needs. */
interface Attempt extends JobRef {
  readonly attempt: number;
}

/**
 * The one internal emitter of job events: the runner and the queue call it at each point of a
 * job's life, and everything that watches jobs (metrics, the public `JobEventsService`) listens
 * here.
 *
 * Emitting is synchronous and can never fail its caller: a listener that throws is logged and the
 * other listeners still hear the event, so the runner's loop and the enqueue path are unaffected.
 * Attempt start times are kept in a `WeakMap` keyed by the claimed job object, so an attempt that
 * never reports an ending (released at shutdown, fenced off) leaves nothing behind.
 */
@Injectable()
export class JobEventEmitter {
  private readonly logger = new Logger('JobsEvents');
  private readonly listeners = new Set<Listener>();
  private readonly startedAt = new WeakMap<object, number>();

  /** Whether anyone listens: work done only for an event (parsing a value) can be skipped. */
  get listening(): boolean {
    return this.listeners.size > 0;
  }

  /** Adds a listener; returns the function that removes it. */
  listen(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  added(jobs: readonly JobRef[]): void {
    if (this.listeners.size === 0) return;
    const at = new Date();
    for (const { id, task, queue } of jobs) this.emit({ type: 'added', id, task, queue, at });
  }

  started(job: Attempt): void {
    // The hot path pays nothing for events when nobody listens.
    if (this.listeners.size === 0) return;
    this.startedAt.set(job, performance.now());
    this.emit({
      type: 'started',
      id: job.id,
      task: job.task,
      queue: job.queue,
      attempt: job.attempt,
      at: new Date(),
    });
  }

  completed(job: Attempt): void {
    if (this.listeners.size === 0) return;
    this.emit({
      type: 'completed',
      id: job.id,
      task: job.task,
      queue: job.queue,
      attempt: job.attempt,
      durationMs: this.duration(job),
      at: new Date(),
    });
  }

  failed(job: Attempt, error: Error, willRetry: boolean, gaveUp: boolean): void {
    if (this.listeners.size === 0) return;
    this.emit({
      type: 'failed',
      id: job.id,
      task: job.task,
      queue: job.queue,
      attempt: job.attempt,
      durationMs: this.duration(job),
      error: error.message,
      willRetry,
      gaveUp,
      at: new Date(),
    });
  }

  snoozed(job: Attempt, seconds: number): void {
    if (this.listeners.size === 0) return;
    this.emit({
      type: 'snoozed',
      id: job.id,
      task: job.task,
      queue: job.queue,
      attempt: job.attempt,
      durationMs: this.duration(job),
      seconds,
      at: new Date(),
    });
  }

  suspended(job: Attempt, waitingFor: JobWaitingFor): void {
    if (this.listeners.size === 0) return;
    this.emit({
      type: 'suspended',
      id: job.id,
      task: job.task,
      queue: job.queue,
      attempt: job.attempt,
      durationMs: this.duration(job),
      waitingFor,
      at: new Date(),
    });
  }

  resumed(job: Attempt): void {
    if (this.listeners.size === 0) return;
    this.emit({
      type: 'resumed',
      id: job.id,
      task: job.task,
      queue: job.queue,
      attempt: job.attempt,
      at: new Date(),
    });
  }

  /** A running attempt's progress, written by this instance or told by another one. */
  progress(job: Attempt, progress: unknown): void {
    if (this.listeners.size === 0) return;
    this.emit({
      type: 'progress',
      id: job.id,
      task: job.task,
      queue: job.queue,
      attempt: job.attempt,
      progress,
      at: new Date(),
    });
  }

  /** A cron job this instance's claim recorded `skipped` instead of starting it, and why. */
  skipped(job: JobRef, reason: SkipReason): void {
    if (this.listeners.size === 0) return;
    this.emit({
      type: 'skipped',
      id: job.id,
      task: job.task,
      queue: job.queue,
      reason,
      at: new Date(),
    });
  }

  cancelled(jobs: readonly JobRef[]): void {
    if (this.listeners.size === 0) return;
    const at = new Date();
    for (const { id, task, queue } of jobs) this.emit({ type: 'cancelled', id, task, queue, at });
  }

  retried(jobs: readonly JobRef[]): void {
    if (this.listeners.size === 0) return;
    const at = new Date();
    for (const { id, task, queue } of jobs) this.emit({ type: 'retried', id, task, queue, at });
  }

  private duration(job: Attempt): number {
    const started = this.startedAt.get(job);
    this.startedAt.delete(job);
    return started === undefined ? 0 : performance.now() - started;
  }

  private emit(event: JobEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.logger.error(`A listener of "${event.type}" events failed: ${toError(err).message}`);
      }
    }
  }
}
