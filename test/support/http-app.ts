import { Test } from '@nestjs/testing';
import type { CanActivate, DynamicModule, INestApplication, Provider, Type } from '@nestjs/common';
import { JobQueueService, JobsAdminModule, JobsModule } from 'nestjs-pg-jobs';
import type { JobsModuleOptions } from 'nestjs-pg-jobs';
import { quietLogger } from './jobs-app.js';
import type { TestDatabase } from './test-database.js';

export interface HttpJobsApp {
  readonly app: INestApplication;
  readonly queue: JobQueueService;
  /** `http://127.0.0.1:<port>` of the listening app. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Boots one instance as an HTTP server on a free port: `JobsModule.forRoot` on `url` plus the
 * given modules (the admin or metrics module), controllers, tasks and providers.
 */
export async function startHttpJobsApp(
  url: string,
  setup: {
    imports?: (Type | DynamicModule)[];
    controllers?: Type[];
    tasks?: Type[];
    providers?: Provider[];
    options?: Partial<JobsModuleOptions>;
  } = {},
): Promise<HttpJobsApp> {
  const module = await Test.createTestingModule({
    imports: [JobsModule.forRoot({ connection: url, ...setup.options }), ...(setup.imports ?? [])],
    providers: [...(setup.tasks ?? []), ...(setup.providers ?? [])],
    controllers: setup.controllers ?? [],
  })
    .setLogger(quietLogger)
    .compile();
  const app = module.createNestApplication({ logger: quietLogger });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  let closing: Promise<void> | undefined;
  return {
    app,
    queue: app.get(JobQueueService),
    url: `http://127.0.0.1:${port}`,
    close: () => (closing ??= app.close()),
  };
}

/**
 * The JSON body of `response`, failing with the body when its status is not `status`: what a test
 * of the admin API reads each answer with.
 */
export async function json<T = any>(
  response: Response | Promise<Response>,
  status = 200,
): Promise<T> {
  const res = await response;
  const body = await res.json();
  if (res.status !== status)
    throw new Error(`Expected ${status}, got ${res.status}: ${JSON.stringify(body)}`);
  return body as T;
}

/** A viewer, by the role a session would give: here, the `x-role` header a test sets. */
export const viewerOnly = (request: { headers: Record<string, string | undefined> }) =>
  request.headers['x-role'] === 'viewer';

export interface AdminApp {
  /** The instance serving the admin API at `/jobs-admin`. */
  readonly server: HttpJobsApp;
  /** A request to `/jobs-admin/api/<path>`. */
  api(path: string, headers?: Record<string, string>, method?: string): Promise<Response>;
  /** A `POST` to `/jobs-admin/api/<path>` with `X-Jobs-Admin: 1`, as `role` (`x-role`). */
  act(path: string, role?: string): Promise<Response>;
}

/**
 * Gives the calling test file an instance serving the admin API on `db`, started before its tests
 * and closed after them: `guard` decides who gets in (everyone by default), and a viewer
 * (`x-role: viewer`, `viewerOnly`) may only look. Tasks nobody runs may be added; the runner polls
 * every 0.1 s.
 */
export function useAdminApp(
  db: TestDatabase,
  guard: CanActivate = { canActivate: () => true },
): AdminApp {
  let server: HttpJobsApp | undefined;
  beforeAll(async () => {
    server = await startHttpJobsApp(db.url, {
      imports: [JobsAdminModule.forRoot({ guard, readOnly: viewerOnly })],
      options: { allowUnknownTasks: true, pollingCheck: 0.1 },
    });
  });
  afterAll(() => server?.close());
  const api = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
    fetch(`${server!.url}/jobs-admin/api/${path}`, { method, headers });
  return {
    get server() {
      return server!;
    },
    api,
    act: (path, role = 'operator') => api(path, { 'x-role': role, 'x-jobs-admin': '1' }, 'POST'),
  };
}
