import 'reflect-metadata';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { createDatabase, resolveDatabaseServer } from '../../tools/dev-database.js';
import { library } from '../library.js';
const server = await resolveDatabaseServer(join(tmpdir(), 'q'));
const db = await createDatabase(server.url, 'jobs_q');
const s = new Session(); s.connect();
await s.post('Profiler.enable');
await library.drain(db.url, 50, 1); // warm
await db.drop();
const db2 = await createDatabase(server.url, 'jobs_q');
await s.post('Profiler.start');
const r = await library.drain(db2.url, 50, 1);
const { profile } = await s.post('Profiler.stop');
console.log('drain', (10000 / r.ms * 1000).toFixed(0));
const self = new Map<string, number>();
const dt = profile.timeDeltas!; const ids = profile.samples!;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
for (let i = 0; i < ids.length; i++) { const n = byId.get(ids[i])!; const k = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/.*node_modules\//, '').replace(/.*\/work\/main\//, '')}:${n.callFrame.lineNumber}`; self.set(k, (self.get(k) ?? 0) + dt[i] / 1000); }
const byFile = new Map<string, number>();
for (const [k, v] of self) { const f = k.split(' ')[1]?.split(':')[0].split('/').slice(0, 2).join('/') ?? '?'; byFile.set(f, (byFile.get(f) ?? 0) + v); }
console.log([...byFile].sort((a, b) => b[1] - a[1]).slice(0, 15).map(([k, v]) => `${v.toFixed(0)}ms ${k}`).join('\n'));
console.log('---');
console.log([...self].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([k, v]) => `${v.toFixed(0)}ms ${k}`).join('\n'));
await db2.drop();
process.exit(0);
