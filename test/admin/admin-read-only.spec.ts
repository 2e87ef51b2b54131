import { JobsAdminModule, JobsError } from 'nestjs-pg-jobs';
import { startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let server: HttpJobsApp;

/** A viewer, by the role a session would give: here, a header the test sets. */
const viewerOnly = (request: { headers: Record<string, string | undefined> }) =>
  request.headers['x-role'] === 'viewer';

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [
      JobsAdminModule.forRoot({ guard: { canActivate: () => true }, readOnly: viewerOnly }),
    ],
    options: { allowUnknownTasks: true, pollingCheck: 0.1 },
  });
});
afterAll(() => server?.close());

const api = (path: string, role: string, method = 'GET') =>
  fetch(`${server.url}/jobs-admin/api/${path}`, {
    method,
    headers: { 'x-role': role, ...(method === 'POST' && { 'x-jobs-admin': '1' }) },
  });

it('lets a read-only viewer look, and refuses every action of theirs with a 403 that says why', async () => {
  const { id } = await server.queue.addJob({
    task: 'nobodyRunsThis',
    waitUntil: new Date(Date.now() + 3600_000),
  });
  expect(await (await api('access', 'viewer')).json()).toEqual({ readOnly: true });
  expect((await api(`jobs/${id}`, 'viewer')).status).toBe(200);
  for (const path of [`jobs/${id}/cancel`, 'jobs/cancel', 'queues/default/pause']) {
    const res = await api(path, 'viewer', 'POST');
    expect(res.status).toBe(403);
    expect(((await res.json()) as { message: string }).message).toBe(
      'This dashboard is read-only for you: you may look, not act.',
    );
  }
  expect((await server.queue.getJob(id))?.state).toBe('pending');
  expect((await server.queue.getQueues()).find((queue) => queue.name === 'default')?.paused).toBe(
    false,
  );

  // Whom the function lets act, acts.
  expect(await (await api('access', 'operator')).json()).toEqual({ readOnly: false });
  expect((await api(`jobs/${id}/cancel`, 'operator', 'POST')).status).toBe(200);
  expect((await server.queue.getJob(id))?.state).toBe('cancelled');
});

it('refuses a readOnly that is neither a boolean nor a function', () => {
  expect(() => JobsAdminModule.forRoot({ readOnly: 'yes' as never })).toThrow(JobsError);
  expect(() => JobsAdminModule.forRoot({ readOnly: 'yes' as never })).toThrow(
    /"readOnly" must be true, false or a function of the request; got "yes"/,
  );
});
