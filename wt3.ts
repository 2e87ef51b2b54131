import { DynamicThreadPool } from 'poolifier';
const keep = setInterval(() => undefined, 1000);
const pool = new DynamicThreadPool(1, 2, '/work/wt-workers/libs/jobs/src/worker-pool/worker-thread.ts', {
  workerOptions: { workerData: { moduleUrl: 'file:///work/wt-workers/test/fixtures/workers/worker-tasks.module.ts' } },
});
pool.emitter?.on('error', (e) => console.log('pool error', e));
const t0 = Date.now();
const log = (...a: unknown[]) => console.log(Date.now() - t0, ...a, JSON.stringify(pool.workerNodes.map((n: any) => [n.info.id, n.info.ready, n.info.dynamic, n.usage.tasks.executing, n.usage.tasks.queued, n.usage.tasks.executed])));
await pool.execute(undefined, 'describe'); log('described');
const sab = new SharedArrayBuffer(8);
const spin = pool.execute({ task: 'worker.spin', payload: { ms: 1000 }, id: 'x', attempt: 1, maxRetries: 0, timeout: 10, control: sab } as any, 'run');
await new Promise((r) => setTimeout(r, 50)); log('spinning');
const ping = null;
log('pinged');
await spin; log('spun');

setInterval(() => log('tick'), 2000).unref(); const t = Date.now(); await pool.destroy(); log('destroyed', Date.now() - t);
clearInterval(keep);
