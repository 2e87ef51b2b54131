import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { NotificationListener } from '../../libs/jobs/src/notify/notification-listener.js';
import type { JobsNotification } from '../../libs/jobs/src/notify/notification-protocol.js';
import { resolveJobsOptions } from '../../libs/jobs/src/options/resolve-options.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

/**
 * The LISTEN session hands each notification to the handlers of its type, and to no other: each
 * service subscribes to the types it owns, and nothing routes them on its behalf.
 */

const db = useTestDatabase('jobs_notification_dispatch');
let database: JobsDatabase;
let listener: NotificationListener;

beforeAll(async () => {
  database = await JobsDatabase.connect(resolveJobsOptions({ connection: db.url, schema: 'jobs' }));
  listener = new NotificationListener(database);
});

afterAll(async () => {
  await listener?.stop();
  await database?.close();
});

it('calls the handlers of a notification type with its notifications alone', async () => {
  const heard: string[] = [];
  listener.on('newJob', () => heard.push('newJob'));
  listener.on('queuePaused', ({ queue, paused }) => heard.push(`queuePaused ${queue} ${paused}`));
  listener.on('queuePaused', () => {
    throw new Error('a handler that fails');
  });
  listener.on('jobCompleted', ({ id, state }) => heard.push(`jobCompleted ${id} ${state}`));
  await listener.start();
  expect(listener.status).toBe('listening');

  const sent: JobsNotification[] = [
    { event: 'queuePaused', queue: 'emails', paused: true },
    { event: 'cancelJob', id: 'a', claim: '1' },
    { event: 'newJob' },
    { event: 'jobCompleted', id: 'b', state: 'failed', error: 'boom' },
  ];
  for (const notification of sent) {
    await db.query('SELECT pg_notify($1, $2)', ['jobs_scheduler', JSON.stringify(notification)]);
  }
  // Delivered in order: once the last is heard, every one before it was dispatched. A failing
  // handler stops neither the next handler of its type nor later notifications.
  await waitFor('the last notification to be heard', () => heard.includes('jobCompleted b failed'));
  expect(heard).toEqual(['queuePaused emails true', 'newJob', 'jobCompleted b failed']);
});
