import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { QueueStateService } from '../../libs/jobs/src/queue-state/queue-state.service.js';
import { startJobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();

it("keeps a pause made while a read of the paused queues was in flight, whatever the read's answer", async () => {
  // A poll every minute: the only reads of the paused queues are the ones this test makes.
  const app = await startJobsApp(db.url, { options: { pollingCheck: 60 } });
  const queues = app.module.get(QueueStateService);
  const database = app.module.get(JobsDatabase);
  // The first read's answer (from the database, before the pause) is held back until the pause has
  // been made: a slow answer, as on a busy connection. Later reads go through.
  let releaseAnswer!: () => void;
  const answerHeld = new Promise<void>((resolve) => (releaseAnswer = resolve));
  let readStarted!: () => void;
  const reading = new Promise<void>((resolve) => (readStarted = resolve));
  const query = database.query.bind(database);
  let held = false;
  database.query = (async (...args: Parameters<JobsDatabase['query']>) => {
    const rows = await query(...args);
    if (!held && /WHERE paused/.test(String(args[0]))) {
      held = true;
      readStarted();
      await answerHeld;
    }
    return rows;
  }) as JobsDatabase['query'];

  const refresh = queues.refresh();
  await reading;
  await queues.setPaused('emails', true);
  expect(queues.isPaused('emails')).toBe(true);
  releaseAnswer();
  await refresh;
  // The read predates the pause: applied, it would resume the queue here until the next poll.
  expect(queues.isPaused('emails')).toBe(true);
  database.query = query;
  await app.close();
});
