import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const SOURCES = join(import.meta.dirname, '../../libs/jobs/src');
const SPECIFIER = /(?:from|import)\s*\(?\s*'([^']+)'/g;

/** Every source file `entry` loads, through relative imports, and the packages each loads (types aside). */
function importGraph(entry: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const visit = (file: string) => {
    // Keyed by the path relative to the sources, like the map it fills: files may import each other.
    if (graph.has(relative(SOURCES, file))) return;
    const code = readFileSync(file, 'utf8').replace(/^import type [^;]*;/gm, '');
    const specifiers = [...code.matchAll(SPECIFIER)].map((m) => m[1]);
    graph.set(
      relative(SOURCES, file),
      specifiers.filter((specifier) => !specifier.startsWith('.')),
    );
    for (const specifier of specifiers.filter((s) => s.startsWith('.'))) {
      visit(join(dirname(file), specifier.replace(/\.js$/, '.ts')));
    }
  };
  visit(join(SOURCES, entry));
  return graph;
}

const importers = (graph: Map<string, string[]>, peer = '@nestjs/schedule') =>
  [...graph].filter(([, packages]) => packages.includes(peer)).map(([file]) => file);

it('keeps @nestjs/schedule out of everything the main entry loads: apps without it still boot', () => {
  const main = importGraph('index.ts');
  expect(main.size).toBeGreaterThan(20);
  expect(importers(main)).toEqual([]);
  // Behind the nestjs-pg-jobs/schedule entry, one file loads it, at boot (import()): a static import
  // would fail the entry with ERR_MODULE_NOT_FOUND before it could say what to install.
  expect(importers(importGraph('cron-bridge/index.ts'))).toEqual(['cron-bridge/schedule-peer.ts']);
});

it('keeps @nestjs/terminus out of everything the main entry loads, behind nestjs-pg-jobs/health', () => {
  expect(importers(importGraph('index.ts'), '@nestjs/terminus')).toEqual([]);
  expect(importers(importGraph('health/index.ts'), '@nestjs/terminus')).toEqual([
    'health/terminus-peer.ts',
  ]);
});
