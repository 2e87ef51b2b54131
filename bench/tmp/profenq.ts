import 'reflect-metadata';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JobQueueService, JobsModule } from 'nestjs-pg-jobs';
import { createDatabase, resolveDatabaseServer } from '../../tools/dev-database.js';
const server = await resolveDatabaseServer(join(tmpdir(), 'q'));
const S = new Session(); S.connect(); await S.post('Profiler.enable');
for (let rep = 0; rep < 3; rep++) {
  const db = await createDatabase(server.url, 'jobs_q');
  @Module({ imports: [JobsModule.forRoot({ connection: db.url, runJobs: false, allowUnknownTasks: true })] }) class M {}
  const app = await NestFactory.createApplicationContext(M, { logger: ['error'] });
  const q = app.get(JobQueueService);
  if (rep === 2) await S.post('Profiler.start');
  const t0 = performance.now();
  for (let i = 0; i < 20; i++) await q.addJobs(Array.from({ length: 500 }, () => ({ task: 'noop' })));
  const ms = performance.now() - t0;
  console.log('jobs/s', (10000 / ms * 1000).toFixed(0));
  if (rep === 2) {
    const { profile } = await S.post('Profiler.stop');
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>(); for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const key = (n: any) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/.*node_modules\//, '').replace(/.*\/work\/main\//, '')}:${n.callFrame.lineNumber}`;
    const self = new Map<string, number>(); const incl = new Map<string, number>();
    profile.samples!.forEach((sid, i) => { const dt = profile.timeDeltas![i] / 1000; const n: any = byId.get(sid); self.set(key(n), (self.get(key(n)) ?? 0) + dt); const seen = new Set<string>(); let id: number | undefined = n.id; while (id !== undefined) { const k = key(byId.get(id)); if (!seen.has(k)) { seen.add(k); incl.set(k, (incl.get(k) ?? 0) + dt); } id = parent.get(id); } });
    console.log([...self].sort((a, b) => b[1] - a[1]).slice(0, 20).map(([k, v]) => `${v.toFixed(1)}ms ${k}`).join('\n'));
    console.log('--- incl');
    console.log([...incl].filter(([k]) => /libs|pg/.test(k)).sort((a, b) => b[1] - a[1]).slice(0, 20).map(([k, v]) => `${v.toFixed(1)}ms ${k}`).join('\n'));
  }
  await app.close(); await db.drop();
}
process.exit(0);
