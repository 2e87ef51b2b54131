import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The file a pool thread starts from, and the `execArgv` it starts with. */
export interface WorkerEntry {
  readonly file: string;
  /** `undefined` lets Node give the thread the main thread's `execArgv`. */
  readonly execArgv?: string[];
}

const LOADER = '../../../../tools/ts-loader/register.mjs';

/**
 * Resolves the thread entry beside this file, so it is whatever the library itself runs as:
 * - compiled (`dist/jobs/worker-pool/worker-thread.js`): plain JavaScript, no loader needed; the
 *   threads inherit the main thread's `execArgv`;
 * - TypeScript sources (tests, `npm start`, benches in this monorepo): `worker-thread.ts`, which
 *   needs a loader in the thread. ts-jest transforms only the Jest thread, so unless the process
 *   already runs with the monorepo's loader, `--import tools/ts-loader/register.mjs` is added.
 * `workerExecArgv` overrides the `execArgv` in both cases.
 */
export function resolveWorkerEntry(execArgv?: readonly string[]): WorkerEntry {
  const fromSources = import.meta.url.endsWith('.ts');
  const file = fileURLToPath(
    new URL(fromSources ? './worker-thread.ts' : './worker-thread.js', import.meta.url),
  );
  if (execArgv) return { file, execArgv: [...execArgv] };
  if (!fromSources || process.execArgv.some((arg) => arg.includes('ts-loader/register')))
    return { file };
  const loader = fileURLToPath(new URL(LOADER, import.meta.url));
  if (!existsSync(loader)) {
    throw new Error(
      `The jobs library runs from TypeScript sources but its thread loader ${loader} is missing.`,
    );
  }
  return { file, execArgv: ['--import', loader] };
}
