import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { installCompiledPackage } from '../support/compiled-package.js';
import type { CompiledApp } from '../support/compiled-package.js';

const run = promisify(execFile);
const ENTRIES = ['', '/schedule', '/testing', '/health'].map((s) => `nestjs-pg-jobs${s}`);
let app: CompiledApp;

// The package as npm installs it for an app with none of its optional peers; each spec runs in a
// process of its own on the Node that runs the suite, so every CI leg checks its own Node.
beforeAll(async () => {
  app = await installCompiledPackage('packaging', ['typescript', '@types/node']);
}, 180_000);
afterAll(() => app?.remove());

const requireEntries = async () => {
  const { stdout, stderr, code } = await app.node('require-entries.cjs');
  expect({ code, stderr: stderr.replace(/^.*ExperimentalWarning.*\n|^\(Use .*\n/gm, '') }).toEqual({
    code: 0,
    stderr: '',
  });
  return JSON.parse(stdout) as Record<string, Record<string, unknown>>;
};

/** Installs packages of this repository into the app, as `npm install <name>` would. */
function install(...names: string[]) {
  for (const name of names) {
    const link = join(app.dir, 'node_modules', name);
    mkdirSync(dirname(link), { recursive: true });
    if (!existsSync(link)) symlinkSync(resolve('node_modules', name), link, 'dir');
  }
}

describe('without the optional peers', () => {
  it('gives every exports entry types, import and default, each naming a shipped file', () => {
    const exports = (app.manifest as { exports: Record<string, Record<string, string>> }).exports;
    expect(Object.keys(exports)).toEqual(['.', './schedule', './testing', './health']);
    for (const conditions of Object.values(exports)) {
      expect(Object.keys(conditions)).toEqual(['types', 'import', 'default']);
      for (const file of Object.values(conditions)) {
        expect(existsSync(join(app.packageDir, file))).toBe(true);
      }
    }
  });

  it('lists typeorm as an optional peer, and the main entry loads without it', async () => {
    expect(app.manifest.peerDependencies?.typeorm).toBeDefined();
    expect(app.manifest.peerDependenciesMeta?.typeorm).toEqual({ optional: true });
    expect(existsSync(join(app.dir, 'node_modules/typeorm'))).toBe(false);
    expect((await requireEntries())['nestjs-pg-jobs']).toEqual({ exports: expect.any(Number) });
  });

  it('require()s the main and testing entries from CommonJS; schedule and health throw MissingPeerDependencyError naming the install', async () => {
    const outcomes = await requireEntries();
    expect(outcomes['nestjs-pg-jobs/testing']).toEqual({ exports: expect.any(Number) });
    for (const [entry, peer] of [
      ['nestjs-pg-jobs/schedule', '@nestjs/schedule'],
      ['nestjs-pg-jobs/health', '@nestjs/terminus'],
    ]) {
      expect(outcomes[entry]).toEqual({
        error: 'MissingPeerDependencyError',
        peerMissing: true,
        packageName: peer,
        message: expect.stringContaining(`(npm install ${peer})`),
      });
    }
  });
});

describe('with the optional peers installed', () => {
  beforeAll(() => install('@nestjs/schedule', '@nestjs/terminus', 'typeorm'));

  it('require()s every entry from CommonJS', async () => {
    const outcomes = await requireEntries();
    for (const entry of ENTRIES) {
      expect({ entry, outcome: outcomes[entry] }).toEqual({
        entry,
        outcome: { exports: expect.any(Number) },
      });
    }
  });

  it('resolves every subpath under moduleResolution node10 (typesVersions)', async () => {
    const { stdout, code } = await app.node('node_modules/typescript/bin/tsc', ['-p', 'node10']);
    expect(stdout).toBe('');
    expect(code).toBe(0);
  });
});

it('ships source maps that carry their sources, each named beside its compiled file', () => {
  const maps = readdirSync(app.packageDir, { recursive: true, encoding: 'utf8' }).filter((f) =>
    f.endsWith('.js.map'),
  );
  expect(maps.length).toBeGreaterThan(50);
  for (const name of maps) {
    const map = JSON.parse(readFileSync(join(app.packageDir, name), 'utf8')) as {
      sources: string[];
      sourcesContent?: (string | null)[];
    };
    const sources = map.sources.map((source) =>
      relative(app.packageDir, join(app.packageDir, dirname(name), source)),
    );
    expect({ name, sources }).toEqual({ name, sources: [name.replace(/\.js\.map$/, '.ts')] });
    expect(map.sourcesContent?.[0]).toEqual(expect.stringContaining('\n'));
  }
});

it('packs no test, bench or monorepo file (npm pack --dry-run)', async () => {
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: app.packageDir,
    env: { ...process.env, npm_config_loglevel: 'silent' },
  });
  const files = (JSON.parse(stdout) as { files: { path: string }[] }[])[0].files.map((f) => f.path);
  expect(files).toContain('index.js');
  expect(files).toContain('testing/index.js'); // the public testing kit, not a test
  const monorepo =
    /(^|\/)(test|bench|fixtures|libs|src|tools|node_modules)\/|\.spec\.|tsconfig|tsbuildinfo|jest\.config|eslint/;
  expect(files.filter((file) => monorepo.test(file))).toEqual([]);
});
