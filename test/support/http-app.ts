import { Test } from '@nestjs/testing';
import type { DynamicModule, INestApplication, Provider, Type } from '@nestjs/common';
import { JobQueueService, JobsModule } from 'nestjs-pg-jobs';
import type { JobsModuleOptions } from 'nestjs-pg-jobs';
import { quietLogger } from './jobs-app.js';

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
