import { createRequire } from 'node:module';
import { MissingPeerDependencyError } from '../errors/jobs.errors.js';

const require = createRequire(import.meta.url);

/**
 * Loads an optional peer dependency when the feature that needs it starts, never when the library
 * is imported: apps that do not use the feature need not install the package. `load` is a
 * literal `import('name')`, so that the package's types flow to the caller.
 *
 * Only the package itself being absent becomes a `MissingPeerDependencyError`; a package that is
 * installed but fails to load (a dependency of its own missing, a syntax error) keeps its error.
 */
export async function importOptionalPeer<T>(
  packageName: string,
  neededBy: string,
  why: string,
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (isNotFound(err, packageName)) {
      throw new MissingPeerDependencyError(packageName, neededBy, why, err);
    }
    throw err;
  }
}

/**
 * Throws `MissingPeerDependencyError` unless `packageName` can be found, without loading it: for an
 * entry point that is of no use without the peer (`nestjs-pg-jobs/schedule`, `/health`), so that
 * importing it says what to install. The entry loads the peer with `importOptionalPeer` when it
 * boots, never by a static import (which fails with ERR_MODULE_NOT_FOUND before any check can run)
 * nor a top-level `await` (which would keep CommonJS apps from require()ing the package).
 */
export function assertOptionalPeerInstalled(
  packageName: string,
  neededBy: string,
  why: string,
): void {
  try {
    require.resolve(packageName);
  } catch (err) {
    if (isNotFound(err, packageName)) {
      throw new MissingPeerDependencyError(packageName, neededBy, why, err);
    }
    throw err;
  }
}

/**
 * A module of a CommonJS optional peer (`typeorm/decorator/...`), required at once; `undefined`
 * when the peer is not installed. For what the library must apply while it is imported, before any
 * feature boots.
 */
export function requireOptionalPeer<T>(packageName: string, subpath: string): T | undefined {
  try {
    return require(`${packageName}/${subpath}`) as T;
  } catch (err) {
    if (isNotFound(err, packageName)) return undefined;
    throw err;
  }
}

/** Whether `err` says that `packageName` (not something it imports) cannot be found. */
function isNotFound(err: unknown, packageName: string): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  // Node's ESM loader says ERR_MODULE_NOT_FOUND; CommonJS resolution (and Jest's) MODULE_NOT_FOUND.
  return (
    (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
    typeof message === 'string' &&
    (message.includes(`'${packageName}'`) || message.includes(`'${packageName}/`))
  );
}
