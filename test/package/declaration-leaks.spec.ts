import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'declarations-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const COMPLETE_INDEX = `
  export { Queue } from './queue.js';
  export type { Options, Named } from './options.js';
  export type { Internals } from './internals.js';`;

const QUEUE = `
  import type { Options } from './options.js';
  import type { Internals } from './internals.js';
  /** A base whose declared type names only public types: not a leak. */
  declare const Base: new () => { readonly options: Options };
  export declare class Queue extends Base {
    add(options: Options, internals: Internals): void;
  }`;

/**
 * Writes a package of declarations (a public queue whose methods name options and internals) with
 * `changes` over it, and checks it from its index.
 */
function check(changes: Record<string, string>) {
  const files: Record<string, string> = {
    'index.d.ts': COMPLETE_INDEX,
    'queue.d.ts': QUEUE,
    'options.d.ts': `
      export interface Named { readonly name: string }
      export interface Options extends Named { readonly limit?: number }`,
    'internals.d.ts': `export interface Internals { readonly secret: string }`,
    ...changes,
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return run(process.execPath, ['tools/check-declarations.mjs', join(dir, 'index.d.ts')], {
    timeout: 60_000,
  });
}

const failure = (stderr: string) => ({ code: 1, stderr: expect.stringContaining(stderr) });

it('fails on a public declaration that names a type the index does not export', async () => {
  const checking = check({
    'index.d.ts': `
      export { Queue } from './queue.js';
      export type { Options } from './options.js';`,
  });
  await expect(checking).rejects.toMatchObject(
    failure('Internals (internals.d.ts) is not exported by the index, yet named by Queue'),
  );
  await expect(checking).rejects.toMatchObject(
    failure('Named (options.d.ts) is not exported by the index, yet named by Options'),
  );
}, 60_000);

it('fails on a public declaration that names a type stripped from the declarations', async () => {
  await expect(check({ 'internals.d.ts': 'export {};' })).rejects.toMatchObject(
    failure(`queue.d.ts: Module '"./internals.js"' has no exported member 'Internals'.`),
  );
}, 60_000);

it('fails on an @internal member left in the public declarations', async () => {
  const queue = QUEUE.replace('add(', '/** @internal */ start(): void;\n    add(');
  await expect(check({ 'queue.d.ts': queue })).rejects.toMatchObject(
    failure('Queue.start is @internal, yet published'),
  );
}, 60_000);

it("counts a member of an exported namespace public, as a namespace's users name it", async () => {
  const checking = check({
    'index.d.ts': `${COMPLETE_INDEX}
      export type { Schema } from './schema.js';`,
    'schema.d.ts': `
      export interface Schema { readonly issues: Schema.Issue[] }
      export declare namespace Schema { interface Issue { readonly message: string } }`,
  });
  await expect(checking).resolves.toMatchObject({ stderr: '' });
}, 60_000);

it('passes once the index exports every type its public declarations name', async () => {
  await expect(check({})).resolves.toMatchObject({ stderr: '' });
}, 60_000);
