import { jest } from '@jest/globals';
import { firstValueFrom, take, toArray } from 'rxjs';
import { JobEventsService } from 'nestjs-pg-jobs';
import type { JobEvent } from 'nestjs-pg-jobs';
import { JobEventEmitter } from '../../libs/jobs/src/events/job-event-emitter.js';
import { FlakyTask } from '../support/flaky-task.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

let app: JobsApp;
beforeAll(async () => {
  app = await startJobsApp(db.url, {
    tasks: [FlakyTask],
    options: { pollingCheck: 0.1, retryBackoff: 0, maxRetries: 1 },
  });
});
afterAll(() => app?.close());

const forJob = (events: JobEvent[], id: string) =>
  events.filter((event) => event.id === id).map((event) => event.type);

it('tells subscribers of a job added, started, failed and retried, started again and completed', async () => {
  const events: JobEvent[] = [];
  const subscription = app.module.get(JobEventsService).events$.subscribe((e) => events.push(e));
  try {
    const { id, promise } = await app.queue.addJob({
      task: 'flaky',
      payload: { failUntilAttempt: 1, message: 'not yet' },
      promise: true,
    });
    await promise;
    await waitFor('the completed event', () => forJob(events, id).includes('completed'));
    // Each event by its attempt: a retry due at once may start (on another connection) before
    // the failed attempt's write has returned and said so, so only each attempt's own order holds.
    const told = events
      .filter((event) => event.id === id)
      .map((event) => event.type + ('attempt' in event ? event.attempt : ''));
    expect([...told].sort()).toEqual(['added', 'completed2', 'failed1', 'started1', 'started2']);
    expect(told[0]).toBe('added');
    expect(told.indexOf('started1')).toBeLessThan(told.indexOf('failed1'));
    expect(told.indexOf('started2')).toBeLessThan(told.indexOf('completed2'));
    expect(told.indexOf('started1')).toBeLessThan(told.indexOf('started2'));
    const failed = events.find((e) => e.id === id && e.type === 'failed');
    expect(failed).toMatchObject({ task: 'flaky', attempt: 1, error: 'not yet', willRetry: true });
    const completed = events.find((e) => e.id === id && e.type === 'completed');
    expect(completed).toMatchObject({ attempt: 2, durationMs: expect.any(Number) });
  } finally {
    subscription.unsubscribe();
  }
});

it('filters by type with on(), and tells of a cancellation', async () => {
  const cancelled = firstValueFrom(app.module.get(JobEventsService).on('cancelled'));
  const { id } = await app.queue.addJob({
    task: 'flaky',
    waitUntil: new Date(Date.now() + 3600_000),
  });
  expect(await app.queue.cancelJob(id)).toBe(true);
  expect(await cancelled).toMatchObject({ type: 'cancelled', id, task: 'flaky' });
});

it('keeps running jobs, and telling other listeners, when a listener throws, and logs why', async () => {
  const logged = jest.spyOn(console, 'error').mockImplementation(() => undefined);
  const events = app.module.get(JobEventEmitter);
  const stopThrowing = events.listen(() => {
    throw new Error('a broken listener');
  });
  const heard = firstValueFrom(
    app.module.get(JobEventsService).on('completed').pipe(take(2), toArray()),
  );
  try {
    const jobs = await app.queue.addJobs([
      { task: 'flaky', promise: true },
      { task: 'flaky', promise: true },
    ]);
    await Promise.all(jobs.map((job) => job.promise));
    expect((await heard).map((event) => event.id).sort()).toEqual(jobs.map((j) => j.id).sort());
    const messages = logged.mock.calls.map((call) => call.map(String).join(' '));
    expect(messages).toContainEqual(
      expect.stringContaining('A listener of "completed" events failed: a broken listener'),
    );
  } finally {
    stopThrowing();
    logged.mockRestore();
  }
});
