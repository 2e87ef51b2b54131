import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';
import { startWorkerApp } from '../support/worker-fixtures.js';

const db = useTestDatabase();
let app: JobsApp;

beforeAll(async () => {
  app = await startWorkerApp(db.url, {
    workers: 2,
    retryBackoff: 0,
    // The clock starts once a thread has booted and started the task: a replacement's boot is not
    // counted. Filling the heap takes a while when the machine is busy.
    taskTimeout: 5,
    workerTimeoutGrace: 0.5,
    workerResourceLimits: { maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: 16 },
  });
}, 60_000);

afterAll(() => app?.close());

it.each([
  ['exit', /thread \d+ running this task exited with code 7/],
  ['throwAsync', /crashed with an uncaught error: thrown from a timer in the worker task/],
  ['oom', /ran out of memory \(workerResourceLimits\)/],
  [
    'spin',
    /did not answer within 0.5s after its signal was aborted \(taskTimeout 5s\); the thread was terminated/,
  ],
])(
  'a thread that dies under its task (%s) fails the job with what happened; the job is retried and the pool goes on',
  async (how, message) => {
    const { id } = await app.queue.addJob({ task: 'worker.die', payload: { how }, maxRetries: 1 });
    const job = await waitFor(
      'both attempts to fail',
      async () => {
        const info = await app.queue.getJob(id);
        return info?.state === 'failed' && info.attempt === 2 && info;
      },
      60_000,
    );
    expect(job.lastErrorMessage).toMatch(message);

    const { id: next, promise } = await app.queue.addJob({
      task: 'worker.greet',
      payload: { name: 'after' },
      promise: true,
    });
    await promise;
    expect((await app.queue.getJob(next))?.state).toBe('completed');
  },
  90_000,
);
