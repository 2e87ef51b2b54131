import { setTimeout as delay } from 'node:timers/promises';
import { InstanceIdInUseError } from 'nestjs-pg-jobs';
import { recording } from '../support/recorder.js';
import { useCluster } from '../support/cluster.js';

const cluster = useCluster({ options: { heartbeatInterval: 0.2, instanceTimeout: 60 } });
const { db } = cluster;

function boot(instanceId: string) {
  return cluster.startApp(instanceId, { ...recording(instanceId), options: { pollingCheck: 0.2 } });
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
  // PostgreSQL releases the id's lock as it notices the dead process's connection close.
  await cluster.kill(await cluster.startProcess('phoenix'));
  const [row] = await db.query<{ silentFor: number }>(
    `SELECT extract(epoch FROM now() - "heartbeatAt")::float8 AS "silentFor" FROM jobs.instances WHERE id = 'phoenix'`,
  );
  expect(row.silentFor).toBeLessThan(60);
  const successor = await boot('phoenix');
  await successor.close();
}, 60_000);

it('stops everything a failed boot started, so that the process can exit', async () => {
  const holder = await boot('taken');
  const failed = await cluster.startFailingBoot('taken', { workers: 1 });
  expect(failed.message).toContain('Instance id "taken" is in use');
  const exit = await Promise.race([
    failed.exited,
    // Unreferenced: the deadline alone must not keep the test run's process alive.
    delay(15_000, 'still running', { ref: false }),
  ]);
  failed.kill();
  expect(exit).toBe(0);
  await holder.close();
}, 60_000);
