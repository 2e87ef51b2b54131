// Module hooks that transpile `.ts` files with `typescript.transpileModule`.
//
// Why not tsx, ts-node or swc-node: tsx emits no decorator metadata (Nest's constructor injection
// needs it) and fails inside worker threads, ts-node cannot resolve Nest 12's `exports`, and
// swc-node crashes the process when a worker thread dies abruptly. This is small and does only
// what the monorepo needs: decorator metadata, the `nestjs-pg-jobs` path alias, and `.js`
// specifiers that name `.ts` sources.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = new URL('../../', import.meta.url);
const aliases = new Map([
  ['nestjs-pg-jobs', new URL('libs/jobs/src/index.ts', root).href],
  ['nestjs-pg-jobs/schedule', new URL('libs/jobs/src/cron-bridge/index.ts', root).href],
  ['nestjs-pg-jobs/testing', new URL('libs/jobs/src/testing/index.ts', root).href],
  ['nestjs-pg-jobs/health', new URL('libs/jobs/src/health/index.ts', root).href],
]);

const compilerOptions = {
  module: ts.ModuleKind.ESNext,
  target: ts.ScriptTarget.ES2022,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  inlineSourceMap: true,
  inlineSources: true,
};

export async function resolve(specifier, context, nextResolve) {
  const alias = aliases.get(specifier);
  if (alias) return { url: alias, shortCircuit: true };
  const parent = context.parentURL;
  if (parent?.endsWith('.ts') && specifier.startsWith('.') && specifier.endsWith('.js')) {
    const candidate = new URL(specifier.slice(0, -3) + '.ts', parent);
    if (existsSync(fileURLToPath(candidate))) return { url: candidate.href, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (!url.endsWith('.ts')) return nextLoad(url, context);
  const fileName = fileURLToPath(url);
  const { outputText } = ts.transpileModule(readFileSync(fileName, 'utf8'), {
    compilerOptions,
    fileName,
  });
  return { format: 'module', source: outputText, shortCircuit: true };
}
