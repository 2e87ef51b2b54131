// The process `npm run bench:memory` measures: an app that runs jobs and does nothing else, plain
// JavaScript on the built package (no TypeScript loader, whose compiler would dwarf the figures).
// Forked by bench/memory.ts with --expose-gc and an IPC channel; argv[2] is the built package's
// index.js, DATABASE_URL the database. It reports its memory at each stage of its start, then
// drains on the parent's word, the queue `default` paused in between so that the parent can fill
// it, until told to stop.
import { createRequire } from 'node:module';
import { setInterval, clearInterval } from 'node:timers';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);

/** RSS and V8's share of it after full collections, so that garbage awaiting one is not counted. */
function settled() {
  for (let i = 0; i < 3; i++) globalThis.gc();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heapUsed };
}

/** Which of `names` have files loaded: each is CommonJS, whose loaded files are in `require.cache`. */
const loaded = (names) =>
  names.filter((name) =>
    Object.keys(require.cache).some((file) => file.includes(`/node_modules/${name}/`)),
  );

const send = (message) => new Promise((resolve) => process.send(message, resolve));

await send({ stage: 'node', memory: settled() });
await import('reflect-metadata');
await import('pg');
await send({ stage: '+ pg', memory: settled() });
const { Injectable, Module } = await import('@nestjs/common');
const { NestFactory } = await import('@nestjs/core');
await send({ stage: '+ @nestjs/core', memory: settled() });
const { JobQueueService, JobTask, JobsModule } = await import(pathToFileURL(process.argv[2]).href);
await send({ stage: '+ nestjs-pg-jobs', memory: settled() });

class NoopTask {
  run() {}
}
Injectable()(NoopTask);
JobTask('memory.noop')(NoopTask);
class AppModule {}
Module({
  imports: [JobsModule.forRoot({ connection: process.env.DATABASE_URL, concurrency: 50 })],
  providers: [NoopTask],
})(AppModule);
const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
const queue = app.get(JobQueueService);
await send({
  stage: 'booted with `connection`',
  memory: settled(),
  // typeorm's index is the ORM itself; its decorator files alone are what the entity classes use.
  ormLoaded: Object.keys(require.cache).some((file) =>
    file.endsWith('/node_modules/typeorm/index.js'),
  ),
  loaded: loaded(['typeorm', 'prom-client', 'cron-parser', '@opentelemetry/api']),
});

/** The RSS high-water mark of the drain in progress, sampled (`maxRSS` is the process's). */
let peak = 0;
let sampler;

process.on('message', async (command) => {
  if (command === 'drain') {
    const before = settled();
    peak = before.rss;
    sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
    await queue.resumeQueue('default');
    await send({ drainStarted: true, before });
  } else if (command === 'drained') {
    clearInterval(sampler);
    // Applied here at once: the parent may fill the queue as soon as it hears back.
    await queue.pauseQueue('default');
    await send({ drainEnded: true, peak, after: settled() });
  } else if (command === 'stop') {
    await app.close();
    process.disconnect();
  }
});
