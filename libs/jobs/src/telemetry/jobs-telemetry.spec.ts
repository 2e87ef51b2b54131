import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Logger } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { JobsTelemetry } from './jobs-telemetry.js';

const options = { telemetry: true, instanceId: 'test' };
const warnings: string[] = [];
beforeAll(() =>
  Logger.overrideLogger({
    log: () => undefined,
    error: () => undefined,
    warn: (message: unknown) => warnings.push(String(message)),
  }),
);
beforeEach(() => (warnings.length = 0));

it('is off with telemetry: false, without importing anything', async () => {
  const telemetry = await JobsTelemetry.load({ ...options, telemetry: false }, () => {
    throw new Error('imported');
  });
  expect(telemetry.enabled).toBe(false);
});

it('is off, and the boot goes on, when @opentelemetry/api is not installed', async () => {
  // A package that really is not installed: the import fails as a missing peer's would.
  const missing = '@opentelemetry/api-that-is-not-installed';
  const telemetry = await JobsTelemetry.load(options, () => import(missing));
  expect(telemetry.enabled).toBe(false);
  expect(warnings).toEqual([]);
});

it('is off, saying why, when @opentelemetry/api is there but fails to load', async () => {
  const telemetry = await JobsTelemetry.load(options, () =>
    Promise.reject(new Error('a broken install')),
  );
  expect(telemetry.enabled).toBe(false);
  expect(warnings).toEqual([
    '@opentelemetry/api could not be loaded (a broken install); tracing is off.',
  ]);
});

it('is on while an SDK has registered a tracer provider, and only then', async () => {
  const telemetry = await JobsTelemetry.load(options);
  // The API alone: its spans would be no-ops, and a job would still pay for them.
  expect(telemetry.enabled).toBe(false);
  trace.setGlobalTracerProvider(new BasicTracerProvider());
  try {
    expect(telemetry.enabled).toBe(true);
  } finally {
    trace.disable();
  }
  expect(telemetry.enabled).toBe(false);
});

it('leaves @opentelemetry/api out of what the library loads: only type imports, and the lazy one', () => {
  const sources = join(import.meta.dirname, '..');
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)],
    );
  const imports = files(sources)
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.spec.ts'))
    .flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/^.*['"]@opentelemetry\/[^'"]+['"].*$/gm)].map(
        (match) => `${relative(sources, file)}: ${match[0].trim()}`,
      ),
    );
  expect(imports).toEqual([
    "telemetry/jobs-telemetry.ts: import type * as OpenTelemetry from '@opentelemetry/api';",
    "telemetry/jobs-telemetry.ts: import type { Span } from '@opentelemetry/api';",
    "telemetry/jobs-telemetry.ts: load: () => Promise<OpenTelemetryApi> = () => import('@opentelemetry/api'),",
  ]);
});
