import 'reflect-metadata';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readdirSync, readFileSync } from 'node:fs';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { Session } from 'node:inspector/promises';
const S = new Session(); S.connect(); await S.post('Profiler.enable');
import { JobQueueService, JobTask, JobsModule } from 'nestjs-pg-jobs';
import { createDatabase, resolveDatabaseServer } from '../../tools/dev-database.js';
function pgCpuMs() {
  let t = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!st.includes('(postgres)')) continue;
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      t += Number(f[11]) + Number(f[12]);
    } catch {}
  }
  return t * 10;
}
@JobTask('noop') @Injectable() class Noop { run() {} }
const server = await resolveDatabaseServer(join(tmpdir(), 'q'));
const C = Number(process.argv[2] ?? 50);
const N = Number(process.argv[3] ?? 1);
for (let rep = 0; rep < 4; rep++) {
  const db = await createDatabase(server.url, 'jobs_q');
  const mk = (opts: object) => { @Module({ imports: [JobsModule.forRoot({ connection: db.url, ...opts })], providers: [Noop] }) class M {} return NestFactory.createApplicationContext(M, { logger: ['error'] }); };
  const a = await mk({ runJobs: false });
  const q = a.get(JobQueueService);
  for (let i = 0; i < 20; i++) await q.addJobs(Array.from({ length: 500 }, () => ({ task: 'noop' })));
  await a.close();
  const client = new pg.Client({ connectionString: db.url }); await client.connect();
  (globalThis as any).TRACE = []; const c0 = process.cpuUsage(); const p0 = pgCpuMs(); const t0 = performance.now();
  const apps = [];
  for (let i = 0; i < N; i++) apps.push(await mk({ concurrency: C, pollingCheck: 0.5, runJobs: false }));
  await Promise.all(apps.splice(0).map((x) => x.close()));
  if (rep === 99) await S.post('Profiler.start');
  for (let i = 0; i < N; i++) apps.push(await mk({ concurrency: C, pollingCheck: 0.5 }));
  for (;;) { const { rows } = await client.query(`SELECT count(*)::int n FROM jobs."jobHistory" WHERE state='completed'`); if (rows[0].n === 10000) break; await new Promise((r) => setTimeout(r, 250)); }
  if (rep === 99) {
    const { profile } = await S.post('Profiler.stop');
    const self = new Map<string, number>(); const dt = profile.timeDeltas!; const ids = profile.samples!;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>(); for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const incl = new Map<string, number>();
    const key = (n: any) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/.*node_modules\//, '').replace(/.*\/work\/main\//, '')}:${n.callFrame.lineNumber}`;
    for (let i = 0; i < ids.length; i++) { let n: any = byId.get(ids[i]); const k = key(n); self.set(k, (self.get(k) ?? 0) + dt[i] / 1000); const seen = new Set<string>(); let id: number | undefined = n.id; while (id !== undefined) { const kk = key(byId.get(id)); if (!seen.has(kk)) { seen.add(kk); incl.set(kk, (incl.get(kk) ?? 0) + dt[i] / 1000); } id = parent.get(id); } }
    console.log([...self].sort((a, b) => b[1] - a[1]).slice(0, 30).map(([k, v]) => `${v.toFixed(0)}ms ${k}`).join('\n'));
    const chains = new Map<string, number>();
    for (let i = 0; i < ids.length; i++) { const n: any = byId.get(ids[i]); const k = key(n); if (!k.startsWith('dispatch') && !k.startsWith('writev')) continue; const chain: string[] = []; let id: number | undefined = parent.get(n.id); while (id !== undefined && chain.length < 6) { chain.push(key(byId.get(id)).split(' ')[0]); id = parent.get(id); } const c = k.split(' ')[0] + ' <- ' + chain.join(' <- '); chains.set(c, (chains.get(c) ?? 0) + dt[i] / 1000); }
    console.log([...chains].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([k, v]) => `${v.toFixed(0)}ms ${k}`).join('\n'));
    console.log('--- inclusive');
    console.log([...incl].filter(([k]) => k.includes('libs/') || k.includes('pg')).sort((a, b) => b[1] - a[1]).slice(0, 30).map(([k, v]) => `${v.toFixed(0)}ms ${k}`).join('\n'));
  }
  const wall = performance.now() - t0; const c = process.cpuUsage(c0); const pgc = pgCpuMs() - p0;
  const { rows } = await client.query(`SELECT extract(epoch FROM max("completedAt") - min("startedAt")) * 1000 AS ms FROM jobs."jobHistory"`);
  console.log(`c=${C} x${N} jobs/s ${(10000 / rows[0].ms * 1000).toFixed(0)} drain ${Number(rows[0].ms).toFixed(0)}ms; window ${wall.toFixed(0)}ms node cpu ${((c.user + c.system) / 1000).toFixed(0)} pg cpu ${pgc}`);
  await Promise.all(apps.map((x) => x.close())); await client.end(); await db.drop();
}
process.exit(0);
