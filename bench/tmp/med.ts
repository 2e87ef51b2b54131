import 'reflect-metadata';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, resolveDatabaseServer } from '../../tools/dev-database.js';
import { baseline } from '../baseline.js';
import { library } from '../library.js';
const server = await resolveDatabaseServer(join(tmpdir(), 'q'));
async function fresh<T>(fn: (url: string) => Promise<T>) {
  const db = await createDatabase(server.url, 'jobs_q');
  try { return await fn(db.url); } finally { await db.drop(); }
}
const what = process.argv[2] ?? 'batch';
const reps = Number(process.argv[3] ?? 5);
const r: Record<string, number[]> = { base: [], lib: [] };
for (let i = 0; i < reps; i++) for (const [name, side] of [['base', baseline], ['lib', library]] as const) {
  const v = what === 'batch' ? 10000 / (await fresh(side.enqueueBatches)) * 1000 : 10000 / (await fresh((u) => side.drain(u, 50, what === 'drain2' ? 2 : 1))).ms * 1000;
  r[name].push(v);
}
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log(what, 'base', med(r.base).toFixed(0), 'lib', med(r.lib).toFixed(0), 'ratio', (med(r.lib) / med(r.base)).toFixed(2), 'ratios', r.lib.map((l, i) => (l / r.base[i]).toFixed(2)).join(' '));
process.exit(0);
