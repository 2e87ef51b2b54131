// The `nestjs-pg-jobs/health` entry point: the only files that import `@nestjs/terminus`, kept
// apart from the main entry so that apps without it installed still load the library.
export { JobsHealthIndicator } from './jobs-health-indicator.js';
export { DEFAULT_HEALTH_MAX_LAG, DEFAULT_HEALTH_TIMEOUT } from './jobs-health-options.interface.js';
export type { JobsHealthCheckOptions } from './jobs-health-options.interface.js';
