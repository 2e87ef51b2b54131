import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ModuleFormat } from './transpile.js';

/** A TypeScript source file: `.ts`, `.mts` or `.cts`. */
export const TYPESCRIPT_FILE = /\.[cm]?ts$/;

/** `./x.js`, `../x.mjs`: how TypeScript code names its source `./x.ts` in an import. */
export const RELATIVE_JAVASCRIPT = /^\.{1,2}\/.*\.[cm]?js$/;

/** The TypeScript source a JavaScript file name stands for (`./x.js` -> `./x.ts`); others as they are. */
export function typescriptSourceOf(javascript: string): string {
  return javascript.replace(/\.([cm]?)js$/, '.$1ts');
}

/** The `type` of the nearest package.json, by folder: every file of a folder asks the same. */
const packageTypes = new Map<string, string | undefined>();

/**
 * What Node would take a file for, were it JavaScript: `.mts` is ESM, `.cts` CommonJS, and `.ts`
 * follows the nearest package.json, ESM only with `"type": "module"`.
 */
export function moduleFormatOf(file: string): ModuleFormat {
  if (file.endsWith('.mts')) return 'module';
  if (file.endsWith('.cts')) return 'commonjs';
  return packageTypeOf(dirname(file)) === 'module' ? 'module' : 'commonjs';
}

function packageTypeOf(folder: string): string | undefined {
  if (packageTypes.has(folder)) return packageTypes.get(folder);
  const manifest = join(folder, 'package.json');
  const parent = dirname(folder);
  let type: string | undefined;
  if (existsSync(manifest)) {
    type = (JSON.parse(readFileSync(manifest, 'utf8')) as { type?: string }).type;
  } else if (parent !== folder) {
    type = packageTypeOf(parent);
  }
  packageTypes.set(folder, type);
  return type;
}
