import { MissingPeerDependencyError } from '../errors/jobs.errors.js';

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

/** Whether `err` says that `packageName` (not something it imports) cannot be found. */
function isNotFound(err: unknown, packageName: string): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  // Node's ESM loader says ERR_MODULE_NOT_FOUND; CommonJS resolution (and Jest's) MODULE_NOT_FOUND.
  return (
    (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
    typeof message === 'string' &&
    message.includes(`'${packageName}'`)
  );
}
