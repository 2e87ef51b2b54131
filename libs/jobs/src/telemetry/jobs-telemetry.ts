import { Logger } from '@nestjs/common';
// Types only, erased from the build: the package itself is imported lazily, when it is installed.
import type * as OpenTelemetry from '@opentelemetry/api';
import type { Span } from '@opentelemetry/api';
import type { AttemptEnding } from '../attempt/attempt-ending.js';
import { toError } from '../common/errors.js';

type OpenTelemetryApi = typeof OpenTelemetry;

/**
 * A job's trace context as the propagator wrote it (W3C: `traceparent`, maybe `tracestate`), kept
 * with the job from its enqueue to each of its attempts.
 */
export type TraceCarrier = Readonly<Record<string, string>>;

/** What an attempt's span names and says of its job. */
export interface TracedAttempt {
  readonly id: string;
  readonly task: string;
  readonly attempt: number;
  readonly traceContext: TraceCarrier | null;
}

/** The module options telemetry reads (part of `ResolvedJobsOptions`). */
export interface TelemetryOptions {
  readonly telemetry: boolean;
  readonly instanceId: string;
}

/** What a missing package throws: in native ESM, and under CommonJS loaders (Jest, bundlers). */
const MODULE_NOT_FOUND = new Set<unknown>(['ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND']);

/** `messaging.system` of every span; also the tracer's name. */
const SYSTEM = 'nestjs-pg-jobs';

/**
 * OpenTelemetry spans of the queue, named and attributed by the messaging semantic conventions:
 * `send <task>` (producer) around an enqueue, whose trace context is stored with the jobs, and
 * `process <task>` (consumer) around each attempt, on whichever instance runs it: a child of the
 * enqueue's span, and linked to it as the conventions ask of consumers. A failed attempt's error is
 * recorded on its span.
 *
 * Off (`enabled` false) with `telemetry: false` or when `@opentelemetry/api` is not installed (it
 * is then never imported), and while no SDK is registered: the queue and the runner then skip these
 * calls altogether, so a job pays nothing for them.
 */
export class JobsTelemetry {
  private static readonly logger = new Logger('JobsTelemetry');

  private readonly tracer?: OpenTelemetry.Tracer;
  /** What the API's global tracer provider delegates to while no SDK has registered one. */
  private readonly unregistered?: OpenTelemetry.TracerProvider;

  private constructor(
    private readonly api: OpenTelemetryApi | undefined,
    private readonly instanceId: string,
  ) {
    this.tracer = api?.trace.getTracer(SYSTEM);
    this.unregistered = api && new api.ProxyTracerProvider().getDelegate();
  }

  /**
   * Loads `@opentelemetry/api` unless `telemetry` is false. `load` imports it (a parameter for the
   * test of a missing package); a missing package turns telemetry off quietly, any other failure
   * with a warning.
   */
  static async load(
    options: TelemetryOptions,
    load: () => Promise<OpenTelemetryApi> = () => import('@opentelemetry/api'),
  ): Promise<JobsTelemetry> {
    if (!options.telemetry) return new JobsTelemetry(undefined, options.instanceId);
    try {
      return new JobsTelemetry(await load(), options.instanceId);
    } catch (err) {
      if (!MODULE_NOT_FOUND.has((err as { code?: unknown })?.code)) {
        JobsTelemetry.logger.warn(
          `@opentelemetry/api could not be loaded (${toError(err).message}); tracing is off.`,
        );
      }
      return new JobsTelemetry(undefined, options.instanceId);
    }
  }

  /**
   * Whether spans are made: the API is loaded and an SDK has registered a tracer provider. Asked
   * for each enqueue and attempt, since an app may register its SDK after the module booted; and
   * without an SDK a no-op span would still be made and ended for each job, for nothing.
   */
  get enabled(): boolean {
    if (!this.api) return false;
    const provider = this.api.trace.getTracerProvider();
    return (
      !(provider instanceof this.api.ProxyTracerProvider) ||
      provider.getDelegate() !== this.unregistered
    );
  }

  /**
   * Runs `insert` (an enqueue of `jobs`) in a producer span, a child of the caller's active span,
   * and hands it the trace context to store with the jobs (`null` when the propagator wrote none:
   * no SDK registered one).
   */
  async send<T>(
    jobs: readonly { readonly id: string; readonly task: string }[],
    insert: (traceContext: TraceCarrier | null) => Promise<T>,
  ): Promise<T> {
    const api = this.api!;
    const tasks = new Set(jobs.map((job) => job.task));
    const task = tasks.size === 1 ? jobs[0].task : undefined;
    const span = this.tracer!.startSpan(task ? `send ${task}` : 'send', {
      kind: api.SpanKind.PRODUCER,
      attributes: {
        ...this.attributes('send', task),
        ...(jobs.length === 1
          ? { 'messaging.message.id': jobs[0].id }
          : { 'messaging.batch.message_count': jobs.length }),
      },
    });
    const context = api.trace.setSpan(api.context.active(), span);
    const carrier: Record<string, string> = {};
    api.propagation.inject(context, carrier);
    try {
      return await api.context.with(context, () =>
        insert(Object.keys(carrier).length > 0 ? carrier : null),
      );
    } catch (err) {
      this.recordFailure(api, span, toError(err));
      throw err;
    } finally {
      span.end();
    }
  }

  /**
   * Runs an attempt (`run` never throws: a task's failure is its outcome's `failed` ending) in a
   * consumer span under the context stored at its enqueue, so that spans the task makes are its
   * children.
   */
  async process<Outcome extends { readonly ending: AttemptEnding }>(
    job: TracedAttempt,
    run: () => Promise<Outcome>,
  ): Promise<Outcome> {
    const api = this.api!;
    // From the job alone, never from whatever context the claim loop happens to run in.
    const parent = job.traceContext
      ? api.propagation.extract(api.ROOT_CONTEXT, job.traceContext)
      : api.ROOT_CONTEXT;
    const enqueued = api.trace.getSpanContext(parent);
    const span = this.tracer!.startSpan(
      `process ${job.task}`,
      {
        kind: api.SpanKind.CONSUMER,
        attributes: {
          ...this.attributes('process', job.task),
          'messaging.message.id': job.id,
          'messaging.nestjs_pg_jobs.attempt': job.attempt,
        },
        links: enqueued && api.isSpanContextValid(enqueued) ? [{ context: enqueued }] : [],
      },
      parent,
    );
    try {
      const outcome = await api.context.with(api.trace.setSpan(parent, span), run);
      if (outcome.ending.outcome === 'failed') this.recordFailure(api, span, outcome.ending.error);
      return outcome;
    } finally {
      span.end();
    }
  }

  private attributes(operation: 'send' | 'process', task: string | undefined) {
    return {
      'messaging.system': SYSTEM,
      'messaging.operation.type': operation,
      'messaging.operation.name': operation,
      'messaging.client.id': this.instanceId,
      ...(task === undefined ? {} : { 'messaging.destination.name': task }),
    };
  }

  private recordFailure(api: OpenTelemetryApi, span: Span, error: Error): void {
    span.recordException(error);
    span.setAttribute('error.type', error.name);
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: error.message });
  }
}
