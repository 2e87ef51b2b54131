import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { moduleFormatOf, RELATIVE_JAVASCRIPT, typescriptSourceOf } from './typescript-files.js';

describe('the module format of a TypeScript file, as Node would take its JavaScript', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'typescript-files-'));
    writeFileSync(join(root, 'package.json'), '{ "type": "module" }');
    mkdirSync(join(root, 'src', 'deep'), { recursive: true });
    mkdirSync(join(root, 'cjs', 'src'), { recursive: true });
    writeFileSync(join(root, 'cjs', 'package.json'), '{ "name": "cjs-app" }');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('follows the nearest package.json: ESM with "type": "module", CommonJS without', () => {
    expect(moduleFormatOf(join(root, 'src', 'deep', 'x.module.ts'))).toBe('module');
    expect(moduleFormatOf(join(root, 'cjs', 'src', 'x.module.ts'))).toBe('commonjs');
  });

  it('takes .mts for ESM and .cts for CommonJS, whatever the package says', () => {
    expect(moduleFormatOf(join(root, 'cjs', 'src', 'x.mts'))).toBe('module');
    expect(moduleFormatOf(join(root, 'src', 'x.cts'))).toBe('commonjs');
  });
});

it('names the TypeScript source of a JavaScript file, and leaves other names alone', () => {
  expect(typescriptSourceOf('/app/src/x.module.js')).toBe('/app/src/x.module.ts');
  expect(typescriptSourceOf('./x.mjs')).toBe('./x.mts');
  expect(typescriptSourceOf('./x.cjs')).toBe('./x.cts');
  expect(typescriptSourceOf('/app/src/x.module.ts')).toBe('/app/src/x.module.ts');
  expect(typescriptSourceOf('/app/data.json')).toBe('/app/data.json');
});

it('takes only relative .js specifiers for names of TypeScript sources', () => {
  expect(['./x.js', '../a/x.mjs', './x.cjs'].every((s) => RELATIVE_JAVASCRIPT.test(s))).toBe(true);
  expect(
    ['pkg/x.js', '/abs/x.js', './x', './x.json'].some((s) => RELATIVE_JAVASCRIPT.test(s)),
  ).toBe(false);
});
