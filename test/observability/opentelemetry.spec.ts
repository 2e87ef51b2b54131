import { Controller, Headers, Inject, Injectable, Post } from '@nestjs/common';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { JobQueueService, JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { startHttpJobsApp } from '../support/http-app.js';
import { startJobsApp, waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase('jobs_otel');
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = trace.getTracer('test');

/** What the handler was given, by job id: the payload must not carry the trace context. */
const payloads = new Map<string, unknown>();

@JobTask('traced.render')
@Injectable()
class RenderTask implements JobTaskHandler<{ failFirst?: boolean }> {
  run(payload: { failFirst?: boolean }, ctx: JobContext): void {
    payloads.set(ctx.id, payload);
    // A span the task makes: a child of its attempt's span, if that one is active here.
    tracer.startSpan('render').end();
    if (payload.failFirst && ctx.attempt === 1) throw new Error('the first attempt fails');
  }
}

/**
 * What an HTTP instrumentation does for a request: a server span, in the trace of the caller's
 * `traceparent` header, active while the handler runs.
 */
@Controller('reports')
class ReportsController {
  constructor(@Inject(JobQueueService) private readonly queue: JobQueueService) {}

  @Post()
  create(@Headers() headers: Record<string, string>): Promise<{ id: string }> {
    const caller = propagation.extract(ROOT_CONTEXT, headers);
    return tracer.startActiveSpan('POST /reports', { kind: SpanKind.SERVER }, caller, (span) =>
      this.queue
        .addJob({ task: 'traced.render', payload: { failFirst: true } })
        .then(({ id }) => ({ id }))
        .finally(() => span.end()),
    );
  }
}

beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});
afterAll(async () => {
  trace.disable();
  context.disable();
  propagation.disable();
  await provider.shutdown();
});
beforeEach(() => exporter.reset());

const named = (name: string) => exporter.getFinishedSpans().filter((span) => span.name === name);
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

it('traces an HTTP request that enqueues and the job it runs on another instance as one trace', async () => {
  const web = await startHttpJobsApp(db.url, {
    controllers: [ReportsController],
    options: { instanceId: 'web', runJobs: false, allowUnknownTasks: true },
  });
  const worker = await startJobsApp(db.url, {
    tasks: [RenderTask],
    options: { instanceId: 'worker', pollingCheck: 0.2, retryBackoff: 0 },
  });
  try {
    await traceOneRequest(web.url, worker);
  } finally {
    await Promise.all([web.close(), worker.close()]);
  }
});

async function traceOneRequest(webUrl: string, worker: JobsApp): Promise<void> {
  const client = tracer.startSpan('client');
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpan(ROOT_CONTEXT, client), headers);
  const response = await fetch(`${webUrl}/reports`, { method: 'POST', headers });
  client.end();
  const { id } = (await response.json()) as { id: string };
  await waitFor(
    'the job to complete on its second attempt',
    async () => (await worker.queue.getJob(id))?.state === 'completed',
  );
  await waitFor(
    'the second attempt span to end',
    () => named('process traced.render').length === 2,
  );

  const traceId = client.spanContext().traceId;
  const [server] = named('POST /reports');
  const [send] = named('send traced.render');
  expect(parentOf(server)).toBe(client.spanContext().spanId);
  expect(send).toMatchObject({
    kind: SpanKind.PRODUCER,
    attributes: {
      'messaging.system': 'nestjs-pg-jobs',
      'messaging.operation.type': 'send',
      'messaging.destination.name': 'traced.render',
      'messaging.message.id': id,
      'messaging.client.id': 'web',
    },
  });
  expect(parentOf(send)).toBe(server.spanContext().spanId);

  const attempts = named('process traced.render').sort(
    (a, b) =>
      (a.attributes['messaging.nestjs_pg_jobs.attempt'] as number) -
      (b.attributes['messaging.nestjs_pg_jobs.attempt'] as number),
  );
  for (const [index, attempt] of attempts.entries()) {
    expect(attempt).toMatchObject({
      kind: SpanKind.CONSUMER,
      attributes: {
        'messaging.system': 'nestjs-pg-jobs',
        'messaging.operation.type': 'process',
        'messaging.destination.name': 'traced.render',
        'messaging.message.id': id,
        'messaging.client.id': 'worker',
        'messaging.nestjs_pg_jobs.attempt': index + 1,
      },
    });
    // A child of the enqueue's span, across instances, and linked to it.
    expect(parentOf(attempt)).toBe(send.spanContext().spanId);
    expect(attempt.links.map((link) => link.context.spanId)).toEqual([send.spanContext().spanId]);
  }
  // The failed attempt says why; the retry carried the context on.
  expect(attempts[0].status).toEqual({
    code: SpanStatusCode.ERROR,
    message: 'the first attempt fails',
  });
  expect(attempts[0].attributes['error.type']).toBe('Error');
  expect(attempts[0].events.map((event) => event.name)).toEqual(['exception']);
  expect(attempts[1].status.code).toBe(SpanStatusCode.UNSET);
  // The task's own spans ran inside its attempt's.
  expect(named('render').map(parentOf).sort()).toEqual(
    attempts.map((attempt) => attempt.spanContext().spanId).sort(),
  );

  const ours = [server, send, ...attempts, ...named('render')];
  expect(new Set(ours.map((span) => span.spanContext().traceId))).toEqual(new Set([traceId]));
  // The context travelled in the job's row, never in what the handler was given.
  expect(payloads.get(id)).toEqual({ failFirst: true });
  const [row] = await db.query<{ traceContext: { traceparent: string } }>(
    `SELECT "traceContext" FROM jobs."jobHistory" WHERE id = $1`,
    [id],
  );
  expect(row.traceContext.traceparent).toContain(traceId);
}

it('makes no span and stores no context with telemetry: false', async () => {
  const app = await startJobsApp(db.url, {
    tasks: [RenderTask],
    options: { instanceId: 'untraced', pollingCheck: 0.2, telemetry: false },
  });
  const { id, promise } = await tracer.startActiveSpan('caller', (span) =>
    app.queue
      .addJob({ task: 'traced.render', payload: {}, promise: true })
      .finally(() => span.end()),
  );
  try {
    await promise;
    expect(exporter.getFinishedSpans().map((span) => span.name)).toEqual(['caller', 'render']);
    const [row] = await db.query<{ traceContext: unknown }>(
      `SELECT "traceContext" FROM jobs."jobHistory" WHERE id = $1`,
      [id],
    );
    expect(row.traceContext).toBeNull();
  } finally {
    await app.close();
  }
});
