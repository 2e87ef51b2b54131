import { createRequire } from 'node:module';
import { MissingPeerDependencyError } from '../errors/jobs.errors.js';

/**
 * Fails the boot, before any thread starts, when the pool threads would need the app's own
 * `typescript` (an optional peer, a devDependency of every Nest app) and cannot find it: resolved
 * from this package, as the threads' hooks load it.
 */
export function requireTypeScript(): void {
  try {
    createRequire(import.meta.url).resolve('typescript');
  } catch (err) {
    throw new MissingPeerDependencyError(
      'typescript',
      'A workerModule written in TypeScript',
      'each pool thread transpiles it with decorator metadata; in production, point workerModule at the compiled .js file',
      err,
    );
  }
}
