import { Inject, Injectable } from '@nestjs/common';
import { Observable, filter } from 'rxjs';
import { JobEventEmitter } from './job-event-emitter.js';
import type { JobEvent, JobEventType } from './job-event.interface.js';

/**
 * Job events of this instance, as an rxjs `Observable`. Inject it anywhere in the app:
 *
 * ```ts
 * constructor(events: JobEventsService) {
 *   events.on('failed').subscribe((e) => alerts.notify(`${e.task} failed: ${e.error}`));
 * }
 * ```
 *
 * Events are delivered synchronously, in order, while the runner waits: keep subscribers quick, or
 * move slow work off with `observeOn(asyncScheduler)` / `mergeMap`. A subscriber that throws does
 * not disturb the queue, but rxjs reports the error as uncaught: handle errors in the subscriber.
 *
 * @publicApi
 */
@Injectable()
export class JobEventsService {
  /** Every event; hot, with no replay: a subscriber hears what happens after it subscribes. */
  readonly events$: Observable<JobEvent>;

  /** @internal Nest constructs it: its parameters are the module's internals. */
  constructor(@Inject(JobEventEmitter) events: JobEventEmitter) {
    this.events$ = new Observable<JobEvent>((subscriber) =>
      events.listen((event) => subscriber.next(event)),
    );
  }

  /** The events of one type, typed accordingly. */
  on<Type extends JobEventType>(type: Type): Observable<Extract<JobEvent, { type: Type }>> {
    return this.events$.pipe(
      filter((event): event is Extract<JobEvent, { type: Type }> => event.type === type),
    );
  }
}
