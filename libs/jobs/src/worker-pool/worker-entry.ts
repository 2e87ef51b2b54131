import { fileURLToPath } from 'node:url';
import { assertOptionalPeerInstalled } from '../common/optional-peer.js';
import { WorkerPoolBootError } from '../errors/jobs.errors.js';
import { TYPESCRIPT_FILE } from '../typescript-workers/typescript-files.js';

/** The file a pool thread starts from, and the `execArgv` it starts with. */
export interface WorkerEntry {
  readonly file: string;
  /** `undefined` lets Node give the thread the main thread's `execArgv`. */
  readonly execArgv?: string[];
  /** Whether the thread registers the package's TypeScript hooks before it imports `workerModule`. */
  readonly transpilesTypeScript: boolean;
}

/** Node options that load code before an entry: how a TypeScript loader gets into a thread. */
const PRELOAD_OPTIONS = ['--import', '--loader', '--experimental-loader', '--require', '-r'];

/**
 * The options a thread inherits when it is given no `execArgv`: the main thread's, and
 * `NODE_OPTIONS`, which Node applies to every thread too.
 */
function inheritedExecArgv(): string[] {
  return [...process.execArgv, ...(process.env.NODE_OPTIONS?.split(/\s+/) ?? [])];
}

/**
 * Resolves the thread entry beside this file, so it is whatever the library itself runs as:
 * - compiled (`worker-pool/worker-thread.js` of the package): plain JavaScript, which a thread runs
 *   with no loader; the threads inherit the main thread's `execArgv`. A `workerModule` written in
 *   TypeScript (an app's tests, an app run from its sources) is transpiled in each thread by the
 *   package's hooks (`typescript-workers`), with the app's own `typescript`, whatever loader the
 *   thread inherits or is given: no loader the app could pass is needed, nor trusted to emit
 *   decorator metadata;
 * - TypeScript sources: `worker-thread.ts`, which a thread runs only with a TypeScript loader.
 *   Whatever runs the main thread's TypeScript need not reach a thread (ts-jest transforms only its
 *   own module registry), and the library cannot know the caller's loader: it comes from
 *   `workerExecArgv`, or from a preloading option the threads inherit. With neither, the boot fails
 *   here, saying what to pass, rather than every thread dying on its first line of TypeScript.
 * `workerExecArgv` replaces the inherited `execArgv` in both cases.
 */
export function resolveWorkerEntry(
  moduleUrl: string,
  workerExecArgv?: readonly string[],
  inherited: readonly string[] = inheritedExecArgv(),
): WorkerEntry {
  const fromSources = import.meta.url.endsWith('.ts');
  const file = fileURLToPath(
    new URL(fromSources ? './worker-thread.ts' : './worker-thread.js', import.meta.url),
  );
  const execArgv = workerExecArgv && [...workerExecArgv];
  if (!fromSources) {
    const transpilesTypeScript = TYPESCRIPT_FILE.test(new URL(moduleUrl).pathname);
    if (transpilesTypeScript) {
      assertOptionalPeerInstalled(
        'typescript',
        'A workerModule written in TypeScript',
        'each pool thread transpiles it with decorator metadata; in production, point workerModule at the compiled .js file',
      );
    }
    return { file, execArgv, transpilesTypeScript };
  }
  if (execArgv || inherited.some(preloads)) return { file, execArgv, transpilesTypeScript: false };
  throw new WorkerPoolBootError(
    `The jobs library runs from its TypeScript sources, so its pool threads start from ${file}, ` +
      'which they cannot load without a TypeScript loader, and this process passes none to its threads. ' +
      `Pass one in the JobsModule option "workerExecArgv" (for example ["--import", "/absolute/path/to/loader.mjs"]), ` +
      'start the process with it (node --import <loader>), or use the compiled package.',
  );
}

function preloads(arg: string): boolean {
  return PRELOAD_OPTIONS.some((option) => arg === option || arg.startsWith(`${option}=`));
}
