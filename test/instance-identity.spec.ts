import { InstanceIdInUseError } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from './support/jobs-app.js';
import { recording } from './support/recorder.js';
import { useTestDatabase } from './support/test-database.js';
import { createExecutionsTable } from './fixtures/instance/database.js';
import { startFailingBoot, startInstanceProcess } from './fixtures/instance/instance-process.js';

const db = useTestDatabase();
beforeAll(() => createExecutionsTable(db));

function boot(instanceId: string) {
  return startJobsApp(db.url, {
    ...recording(instanceId),
    options: { instanceId, pollingCheck: 0.2, heartbeatInterval: 0.2, instanceTimeout: 60 },
  });
}

it('refuses to boot a second live instance under an id in use, and leaves the first one alone', async () => {
  const first = await boot('twin');
  const second = boot('twin');
  await expect(second).rejects.toThrow(InstanceIdInUseError);
  await expect(second).rejects.toThrow(
    /Instance id "twin" is in use by a running instance \(host .+, pid \d+/,
  );
  // The first one still holds its registration and runs jobs.
  const { promise } = await first.queue.addJob({ task: 'record', promise: true });
  await promise;
  await first.close();
  // Once it is gone, the id is free.
  const successor = await boot('twin');
  await successor.close();
});

it('boots at once under the id of an instance that was killed, its heartbeat still fresh', async () => {
  const killed = await startInstanceProcess(db.url, {
    instanceId: 'phoenix',
    heartbeatInterval: 0.2,
    instanceTimeout: 60,
  });
  killed.signal('SIGKILL');
  await killed.exited;
  // PostgreSQL releases the id's lock as it notices the dead process's connection close.
  await waitFor('the killed instance to be disconnected', async () => {
    const rows = await db.query(
      `SELECT 1 FROM pg_stat_activity WHERE application_name LIKE '%phoenix:instance'`,
    );
    return rows.length === 0;
  });
  const [row] = await db.query<{ silentFor: number }>(
    `SELECT extract(epoch FROM now() - "heartbeatAt")::float8 AS "silentFor" FROM jobs.instances WHERE id = 'phoenix'`,
  );
  expect(row.silentFor).toBeLessThan(60);
  const successor = await boot('phoenix');
  await successor.close();
}, 60_000);

it('stops everything a failed boot started, so that the process can exit', async () => {
  const holder = await boot('taken');
  const failed = await startFailingBoot(db.url, { instanceId: 'taken', workers: 1 });
  expect(failed.message).toContain('Instance id "taken" is in use');
  const exit = await Promise.race([
    failed.exited,
    new Promise((resolve) => setTimeout(() => resolve('still running'), 15_000)),
  ]);
  failed.kill();
  expect(exit).toBe(0);
  await holder.close();
}, 60_000);
