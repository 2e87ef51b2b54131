import { Injectable } from '@nestjs/common';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { JobTask, JobsAdminModule } from 'nestjs-pg-jobs';
import type { JobTaskHandler, QueueInfo } from 'nestjs-pg-jobs';
import { startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const TOKEN = 'Bearer let-me-in';

class TokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest().headers.authorization === TOKEN;
  }
}

@JobTask({ name: 'sendMail', queue: 'emails' })
@Injectable()
class SendMail implements JobTaskHandler {
  run(): void {}
}

let server: HttpJobsApp;
const api = (path: string, init: RequestInit = {}, token = TOKEN) =>
  fetch(`${server.url}/ops/api/${path}`, {
    ...init,
    headers: { authorization: token, ...(init.headers as Record<string, string>) },
  });
const post = (path: string, headers: Record<string, string> = { 'x-jobs-admin': '1' }) =>
  api(path, { method: 'POST', headers });
const queuesOf = async (res: Promise<Response>) => {
  const response = await res;
  expect(response.status).toBe(200);
  return ((await response.json()) as { queues: QueueInfo[] }).queues;
};
const emails = (queues: QueueInfo[]) => queues.find((queue) => queue.name === 'emails');

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ path: 'ops', guard: new TokenGuard() })],
    tasks: [SendMail],
    options: {
      pollingCheck: 0.2,
      queues: {
        emails: {
          concurrency: 3,
          globalConcurrency: 5,
          rateLimit: { limit: 100, periodSeconds: 60 },
        },
        imports: { paused: true },
      },
    },
  });
});
afterAll(() => server?.close());

it('lists every queue with its state, counts and the limits configured here', async () => {
  const queues = await queuesOf(api('queues'));
  expect(queues.map((queue) => queue.name)).toEqual(['emails', 'imports']);
  expect(emails(queues)).toEqual({
    name: 'emails',
    paused: false,
    pending: 0,
    blocked: 0,
    due: 0,
    active: 0,
    concurrency: 3,
    globalConcurrency: 5,
    rateLimit: { limit: 100, periodSeconds: 60 },
  });
  // `paused: true` is where a queue starts.
  expect(queues[1]).toEqual({
    name: 'imports',
    paused: true,
    pending: 0,
    blocked: 0,
    due: 0,
    active: 0,
  });
});

it('pauses and resumes a queue behind the guard and the action header', async () => {
  expect((await api('queues', {}, 'Bearer nope')).status).toBe(403);
  expect((await post('queues/emails/pause', {})).status).toBe(403);
  expect((await api('queues/emails/pause', { method: 'POST' }, 'Bearer nope')).status).toBe(403);
  expect((await post('queues/no%20spaces/pause')).status).toBe(400);
  expect(emails(await queuesOf(api('queues')))?.paused).toBe(false);

  expect(emails(await queuesOf(post('queues/emails/pause')))).toMatchObject({ paused: true });
  const { id } = await server.queue.addJob({ task: 'sendMail' });
  expect(emails(await queuesOf(api('queues')))).toMatchObject({ paused: true, pending: 1, due: 1 });
  expect((await server.queue.getJob(id))?.state).toBe('pending');

  expect(emails(await queuesOf(post('queues/emails/resume')))).toMatchObject({ paused: false });
  await waitFor(
    'the job to complete',
    async () => (await server.queue.getJob(id))?.state === 'completed',
  );
  expect(await server.queue.getJob(id)).toMatchObject({ queue: 'emails', groupKey: null });
});
