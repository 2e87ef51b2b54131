import { WorkerPoolBootError } from '../errors/jobs.errors.js';
import { resolveWorkerEntry } from './worker-entry.js';

// Under ts-jest the library runs from its TypeScript sources: these are the cases that need a loader.
const MODULE = 'file:///app/src/worker.module.ts';

describe('the entry of a pool thread, from the TypeScript sources', () => {
  it('starts worker-thread.ts with workerExecArgv when given, whatever the process inherits', () => {
    const entry = resolveWorkerEntry(MODULE, ['--import', '/loader.mjs'], []);
    expect(entry.file).toMatch(/worker-pool\/worker-thread\.ts$/);
    expect(entry.execArgv).toEqual(['--import', '/loader.mjs']);
  });

  it.each([
    [['--import', './loader.mjs']],
    [['--import=./loader.mjs']],
    [['--experimental-loader', 'ts-node/esm']],
    [['-r', 'ts-node/register']],
  ])('lets the threads inherit a preloading option of the process: %j', (inherited) => {
    const entry = resolveWorkerEntry(MODULE, undefined, inherited);
    expect(entry.file).toMatch(/worker-thread\.ts$/);
    expect(entry.execArgv).toBeUndefined();
    // The caller's loader runs the library's TypeScript, and the module's with it.
    expect(entry.transpilesTypeScript).toBe(false);
  });

  it('fails the boot, saying to pass workerExecArgv, when nothing would load TypeScript in a thread', () => {
    const resolve = () =>
      resolveWorkerEntry(MODULE, undefined, [
        '--experimental-vm-modules',
        '--max-old-space-size=512',
      ]);
    expect(resolve).toThrow(WorkerPoolBootError);
    expect(resolve).toThrow(/TypeScript loader.*"workerExecArgv"/);
  });
});
