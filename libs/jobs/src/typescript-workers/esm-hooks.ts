// Module customization hooks (they run in Node's hooks thread) for a pool thread whose workerModule
// is TypeScript: registered by `registerTypeScriptHooks`.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { LoadHook, ResolveHook } from 'node:module';
import { fileURLToPath } from 'node:url';
import {
  moduleFormatOf,
  RELATIVE_JAVASCRIPT,
  TYPESCRIPT_FILE,
  typescriptSourceOf,
} from './typescript-files.js';
import { transpile } from './transpile.js';

/** Resolves a `.js` specifier of a TypeScript file to its `.ts` source when no `.js` file is there. */
export const resolve: ResolveHook = async (specifier, context, nextResolve) => {
  const parent = context.parentURL;
  if (
    parent?.startsWith('file:') &&
    TYPESCRIPT_FILE.test(parent) &&
    RELATIVE_JAVASCRIPT.test(specifier)
  ) {
    const javascript = new URL(specifier, parent);
    const source = new URL(typescriptSourceOf(specifier), parent);
    if (!existsSync(javascript) && existsSync(source)) {
      return { url: source.href, shortCircuit: true };
    }
  }
  return nextResolve(specifier, context);
};

/**
 * Transpiles an ESM TypeScript file here. A CommonJS one goes to Node's CommonJS loader (no
 * `source`), whose `.ts` handler transpiles it in the thread: its `require()` calls then resolve as
 * CommonJS does (no extension, index files) and `__dirname` is defined.
 */
export const load: LoadHook = async (url, context, nextLoad) => {
  if (!url.startsWith('file:') || !TYPESCRIPT_FILE.test(url)) return nextLoad(url, context);
  const file = fileURLToPath(url);
  const format = moduleFormatOf(file);
  if (format === 'commonjs') return { format, shortCircuit: true };
  const source = transpile(await readFile(file, 'utf8'), file, format);
  return { format, source, shortCircuit: true };
};
