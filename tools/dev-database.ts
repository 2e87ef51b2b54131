/**
 * Where the example app, the tests and the benchmarks find PostgreSQL: the library's testing kit
 * (`nestjs-pg-jobs/testing`), the same code users' tests run.
 */
export {
  createDatabase,
  freePort,
  resolveDatabaseServer,
  startEmbeddedPostgres,
} from '../libs/jobs/src/testing/database-server.js';
