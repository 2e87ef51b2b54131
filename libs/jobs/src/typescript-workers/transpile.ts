import { createRequire } from 'node:module';
import type * as TypeScript from 'typescript';

/** The module system a file's transpiled code is written for. */
export type ModuleFormat = 'module' | 'commonjs';

const require = createRequire(import.meta.url);
/** The app's own compiler (an optional peer), loaded on the first TypeScript file only. */
let typescript: typeof TypeScript | undefined;

/**
 * Transpiles one TypeScript file as `tsc` would for a Nest app, file by file (no type check):
 * legacy decorators with their metadata, which Nest's constructor injection by type reads
 * (`design:paramtypes`) — what tsx and Node's own type stripping do not emit.
 */
export function transpile(source: string, fileName: string, format: ModuleFormat): string {
  const ts = (typescript ??= require('typescript') as typeof TypeScript);
  return ts.transpileModule(source, {
    fileName,
    compilerOptions: {
      module: format === 'module' ? ts.ModuleKind.ESNext : ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      esModuleInterop: true,
      inlineSourceMap: true,
      inlineSources: true,
    },
  }).outputText;
}
