import { JobsAdminModule, JobsError } from 'nestjs-pg-jobs';
import { useAdminApp } from '../support/http-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const admin = useAdminApp(db);
const look = (path: string, role: string) => admin.api(path, { 'x-role': role });

it('lets a read-only viewer look, and refuses every action of theirs with a 403 that says why', async () => {
  const { id } = await admin.server.queue.addJob({
    task: 'nobodyRunsThis',
    waitUntil: new Date(Date.now() + 3600_000),
  });
  expect(await (await look('access', 'viewer')).json()).toEqual({ readOnly: true });
  expect((await look(`jobs/${id}`, 'viewer')).status).toBe(200);
  for (const path of [`jobs/${id}/cancel`, 'jobs/cancel', 'queues/default/pause']) {
    const res = await admin.act(path, 'viewer');
    expect(res.status).toBe(403);
    expect(((await res.json()) as { message: string }).message).toBe(
      'This dashboard is read-only for you: you may look, not act.',
    );
  }
  expect((await admin.server.queue.getJob(id))?.state).toBe('pending');
  expect(
    (await admin.server.queue.getQueues()).find((queue) => queue.name === 'default')?.paused,
  ).toBe(false);

  // Whom the function lets act, acts.
  expect(await (await look('access', 'operator')).json()).toEqual({ readOnly: false });
  expect((await admin.act(`jobs/${id}/cancel`)).status).toBe(200);
  expect((await admin.server.queue.getJob(id))?.state).toBe('cancelled');
});

it('refuses a readOnly that is neither a boolean nor a function', () => {
  expect(() => JobsAdminModule.forRoot({ readOnly: 'yes' as never })).toThrow(JobsError);
  expect(() => JobsAdminModule.forRoot({ readOnly: 'yes' as never })).toThrow(
    /"readOnly" must be true, false or a function of the request; got "yes"/,
  );
});
