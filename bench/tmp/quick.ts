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
import { readdirSync, readFileSync } from 'node:fs';
function pgCpuMs() {
  let t = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!st.includes('(postgres)')) continue;
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      t += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {}
  }
  return t * 10;
}
const which = (process.argv[2] ?? 'drain,batch').split(',');
for (let i = 0; i < 2; i++) for (const [name, side] of [['base', baseline], ['lib', library]] as const) {
  if (which.includes('batch')) console.log(name, 'batch', (10000 / (await fresh(side.enqueueBatches)) * 1000).toFixed(0));
  if (which.includes('one')) console.log(name, 'one', (10000 / (await fresh(side.enqueueOneByOne)) * 1000).toFixed(0));
  if (which.includes('drain')) { const c0 = process.cpuUsage(); const p0 = pgCpuMs(); const t0 = performance.now(); const r = await fresh((u) => side.drain(u, 50, 1)); const c = process.cpuUsage(c0); console.log(name, 'drain50', (10000 / r.ms * 1000).toFixed(0), 'node cpu ms', ((c.user + c.system) / 1000).toFixed(0), 'wall incl setup', (performance.now() - t0).toFixed(0), 'drain ms', r.ms.toFixed(0), 'pg cpu ms', pgCpuMs() - p0); }
  if (which.includes('drain10')) console.log(name, 'drain10', (10000 / (await fresh((u) => side.drain(u, 10, 1))).ms * 1000).toFixed(0));
  if (which.includes('drain2')) console.log(name, 'drain50x2', (10000 / (await fresh((u) => side.drain(u, 50, 2))).ms * 1000).toFixed(0));
}
process.exit(0);
