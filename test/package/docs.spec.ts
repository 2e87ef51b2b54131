import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { installCompiledPackage } from '../support/compiled-package.js';
import type { CompiledApp } from '../support/compiled-package.js';

/*
 * The guide against the code: README.md and docs/*.md.
 *
 * - Every relative link resolves: its file, and its `#anchor` to a heading of a Markdown file.
 * - Every ```ts (or ```typescript) block compiles. Each block is written to a module of its own
 *   and all of them are type-checked in one `tsc --noEmit` run against the built package,
 *   installed as an app installs it. A block imports what it uses; the names that stand for the
 *   reader's own code (`queue`, `Mailer`, `Order`, ...) are declared once for all blocks in
 *   test/fixtures/docs-app/prelude.d.ts, and a block's own declaration shadows them. A block whose
 *   info string is `ts fragment` is not compiled: keep those rare (docs/README.md says when).
 */

const ROOT = process.cwd();
const PAGES = [
  'README.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

interface Block {
  readonly page: string;
  readonly line: number;
  readonly code: string;
}

/** The page's lines outside fenced code blocks, and its TypeScript blocks. */
function parse(page: string): { prose: { text: string; line: number }[]; blocks: Block[] } {
  const prose: { text: string; line: number }[] = [];
  const blocks: Block[] = [];
  let fence: { info: string; line: number; lines: string[] } | undefined;
  readFileSync(page, 'utf8')
    .split('\n')
    .forEach((text, index) => {
      if (fence) {
        if (text.startsWith('```')) {
          if (/^(ts|typescript)$/.test(fence.info)) {
            blocks.push({ page, line: fence.line, code: fence.lines.join('\n') });
          }
          fence = undefined;
        } else fence.lines.push(text);
      } else if (text.startsWith('```')) {
        fence = { info: text.slice(3).trim(), line: index + 1, lines: [] };
      } else prose.push({ text, line: index + 1 });
    });
  return { prose, blocks };
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const { text } of parse(page).prose) {
    const heading = /^#{1,6} (.*)$/.exec(text);
    if (!heading) continue;
    const base = slug(heading[1]);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count ? `${base}-${count}` : base);
  }
  return result;
}

describe('the guide', () => {
  it('has no relative link that does not resolve, to a file or to a heading', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      for (const { text, line } of parse(page).prose) {
        for (const [, target] of text.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
          if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
          const [file, anchor] = target.split('#');
          const path = file ? resolve(dirname(page), file) : resolve(page);
          if (!existsSync(path)) broken.push(`${page}:${line} ${target}: no such file`);
          else if (anchor && path.endsWith('.md') && !anchors(relative(ROOT, path)).has(anchor)) {
            broken.push(`${page}:${line} ${target}: no such heading`);
          }
        }
      }
    }
    expect(broken).toEqual([]);
  });

  describe('its TypeScript blocks', () => {
    let app: CompiledApp;

    beforeAll(async () => {
      app = await installCompiledPackage('docs-app', [
        'typescript',
        '@types/node',
        '@types/pg',
        '@types/jest',
        '@jest/globals',
        'typeorm',
        '@nestjs/typeorm',
        '@nestjs/testing',
        '@nestjs/schedule',
        '@nestjs/terminus',
        '@nestjs/platform-express',
        'prom-client',
        'zod',
      ]);
    }, 180_000);
    afterAll(() => app?.remove());

    it('compile against the built package, each block a module', async () => {
      const blocks = PAGES.flatMap((page) => parse(page).blocks);
      expect(blocks.length).toBeGreaterThan(10);
      // In the app's test/ folder, as a reader's test is: `../src/...` imports resolve to the
      // fixture's stand-ins for the reader's modules (test/fixtures/docs-app).
      mkdirSync(join(app.dir, 'test'));
      blocks.forEach((block, index) => {
        writeFileSync(join(app.dir, 'test', `block-${index}.ts`), `${block.code}\nexport {};\n`);
      });
      const { stdout, code } = await app.node('node_modules/typescript/bin/tsc', ['-p', '.']);
      // Each error named by the page and line of its block, not by the temporary file.
      const errors = stdout.replace(
        /test\/block-(\d+)\.ts\((\d+),\d+\)/g,
        (_, index: string, line: string) => {
          const block = blocks[Number(index)];
          return `${block.page}:${block.line + Number(line)}`;
        },
      );
      expect(errors).toBe('');
      expect(code).toBe(0);
    }, 120_000);
  });
});
