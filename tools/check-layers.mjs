// Keeps the folders of libs/jobs/src a stack: fails, listing every cycle between folders, when one
// folder imports (even a type) from another that imports it back, directly or around a loop.
// `--print` shows the folders as layers, bottom-up: a folder imports only from layers below it.
// Run by `npm run lint`; plain Node, so it needs no build and no dependency.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../libs/jobs/src/', import.meta.url));
/** The files directly in libs/jobs/src (the module, the public index): the top of the stack. */
const ROOT = '(root)';

/** `import ... from '.x'`, `export ... from '.x'`, `import '.x'` and `import('.x')`. */
const RELATIVE_IMPORT = /(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g;

function sourceFiles(folder) {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

function folderOf(path) {
  const parts = relative(SRC, path).split(sep);
  return parts.length === 1 ? ROOT : parts[0];
}

/** folder -> imported folder -> the importing files, as `file:line`. */
function folderGraph() {
  const graph = new Map();
  for (const file of sourceFiles(SRC)) {
    const from = folderOf(file);
    if (!graph.has(from)) graph.set(from, new Map());
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(RELATIVE_IMPORT)) {
      const target = resolve(dirname(file), match[1]);
      // Imports that leave the library (none should) are not edges between its folders.
      if (relative(SRC, target).startsWith('..')) continue;
      const to = folderOf(target);
      if (to === from) continue;
      const line = text.slice(0, match.index).split('\n').length;
      const edges = graph.get(from);
      if (!edges.has(to)) edges.set(to, []);
      edges.get(to).push(`${relative(SRC, file)}:${line}`);
    }
  }
  return graph;
}

/** Every elementary cycle, each once, starting at its alphabetically first folder. */
function cycles(graph) {
  const found = [];
  const folders = [...graph.keys()].sort();
  for (const start of folders) {
    const walk = (folder, path) => {
      for (const next of graph.get(folder)?.keys() ?? []) {
        if (next === start) found.push([...path, start]);
        else if (next > start && !path.includes(next)) walk(next, [...path, next]);
      }
    };
    walk(start, [start]);
  }
  return found;
}

/** Each folder's layer: one above the highest folder it imports (the graph has no cycle). */
function layers(graph) {
  const level = new Map();
  const levelOf = (folder) => {
    if (!level.has(folder)) {
      const below = [...(graph.get(folder)?.keys() ?? [])];
      level.set(folder, Math.max(-1, ...below.map(levelOf)) + 1);
    }
    return level.get(folder);
  };
  const byLevel = [];
  for (const folder of graph.keys()) (byLevel[levelOf(folder)] ??= []).push(folder);
  return byLevel.map((names) => names.sort());
}

const graph = folderGraph();
const refused = cycles(graph);

if (refused.length === 0 && process.argv.includes('--print')) {
  console.log('Folders of libs/jobs/src as layers, bottom-up (each imports only from below):');
  layers(graph).forEach((names, level) => console.log(`${level}  ${names.join(', ')}`));
}

if (refused.length > 0) {
  const count = `${refused.length} cycle${refused.length === 1 ? '' : 's'}`;
  console.error(`Folders of libs/jobs/src import each other (${count}):`);
  for (const cycle of refused) {
    console.error(`\n  ${cycle.join(' -> ')}`);
    for (let i = 0; i + 1 < cycle.length; i++) {
      const files = graph.get(cycle[i]).get(cycle[i + 1]);
      console.error(`    ${cycle[i]} -> ${cycle[i + 1]}: ${files.join(', ')}`);
    }
  }
  console.error(
    '\nMove what both sides need into the lower folder (or one below both), so imports go one way.',
  );
  process.exit(1);
}
