import { readFileSync } from 'node:fs';
import Module, { register } from 'node:module';
import { RELATIVE_JAVASCRIPT, TYPESCRIPT_FILE, typescriptSourceOf } from './typescript-files.js';
import { transpile } from './transpile.js';

/** The parts of Node's CommonJS loader that `require` hooks use (as ts-node and pirates do). */
interface CommonJsLoader {
  _extensions: Record<string, (module: CommonJsModule, filename: string) => void>;
  _resolveFilename(request: string, parent: CommonJsModule | undefined, ...rest: unknown[]): string;
}
interface CommonJsModule {
  readonly filename?: string;
  _compile(code: string, filename: string): void;
}

/**
 * Makes this thread load TypeScript files (ESM and CommonJS) transpiled with decorator metadata.
 * Called in a pool thread, before it imports a TypeScript `workerModule`: what the thread imports
 * from then on goes through these hooks, registered last so that they run before any loader the
 * thread inherited (tsx emits no decorator metadata).
 */
export function registerTypeScriptHooks(): void {
  register('./esm-hooks.js', import.meta.url);
  const loader = Module as unknown as CommonJsLoader;
  const compile = (module: CommonJsModule, filename: string) =>
    module._compile(transpile(readFileSync(filename, 'utf8'), filename, 'commonjs'), filename);
  loader._extensions['.ts'] = compile;
  loader._extensions['.cts'] = compile;
  const resolveFilename = loader._resolveFilename;
  loader._resolveFilename = function (request, parent, ...rest) {
    try {
      return resolveFilename.call(this, request, parent, ...rest);
    } catch (err) {
      const fromTypeScript =
        parent?.filename !== undefined && TYPESCRIPT_FILE.test(parent.filename);
      if (!fromTypeScript || !RELATIVE_JAVASCRIPT.test(request)) throw err;
      return resolveFilename.call(this, typescriptSourceOf(request), parent, ...rest);
    }
  };
}
