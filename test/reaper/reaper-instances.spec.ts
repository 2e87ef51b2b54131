import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler, JobsModuleOptions } from 'nestjs-pg-jobs';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useCluster } from '../support/cluster.js';

const ran: string[] = [];

@JobTask('note')
@Injectable()
class NoteTask implements JobTaskHandler {
  run(_payload: unknown, ctx: { id: string }) {
    ran.push(ctx.id);
  }
}

const cluster = useCluster({ options: { pollingCheck: 0.2, workers: 1 } });
const { db } = cluster;

function boot(instanceId: string, options: Partial<JobsModuleOptions>): Promise<JobsApp> {
  return cluster.startApp(instanceId, { tasks: [NoteTask], options });
}

async function heartbeatOf(id: string): Promise<Date | undefined> {
  const [row] = await db.query<{ heartbeatAt: Date }>(
    `SELECT "heartbeatAt" FROM jobs.instances WHERE id = $1`,
    [id],
  );
  return row?.heartbeatAt;
}

it('registers at boot, heartbeats, and deregisters on a clean shutdown', async () => {
  const app = await boot('registered', { heartbeatInterval: 0.1, instanceTimeout: 1 });
  const first = await heartbeatOf('registered');
  expect(first).toBeInstanceOf(Date);
  await waitFor('a later heartbeat', async () => {
    const later = await heartbeatOf('registered');
    return later !== undefined && later > first!;
  });
  await app.close();
  expect(await heartbeatOf('registered')).toBeUndefined();
});

it('requeues at boot, without waiting instanceTimeout, what an earlier life of the same id left active', async () => {
  // The earlier life: a registration that still looks fresh, and a job it was running.
  const id = randomUUID();
  await db.query(`INSERT INTO jobs.instances (id, "instanceTimeout") VALUES ('same-id', 3600)`);
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "executedBy", "createdAt", "startedAt")
     VALUES ($1, 'note', 'active', 1, 3, 'same-id', now(), now())`,
    [id],
  );
  await boot('same-id', { instanceTimeout: 3600, heartbeatInterval: 1 });
  await waitFor('the orphan to run again', () => ran.includes(id));
  const [job] = await db.query<{ state: string; attempt: number; lastErrorMessage: string }>(
    `SELECT state, attempt, "lastErrorMessage" FROM jobs."jobHistory" WHERE id = $1`,
    [id],
  );
  await waitFor('the orphan to complete', async () => {
    const [row] = await db.query<{ state: string }>(
      `SELECT state FROM jobs."jobHistory" WHERE id = $1`,
      [id],
    );
    return row.state === 'completed';
  });
  expect(job.attempt).toBe(2);
  expect(job.lastErrorMessage).toContain('Instance same-id restarted');
});
