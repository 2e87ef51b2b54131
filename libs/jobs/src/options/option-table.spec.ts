import { readFileSync } from 'node:fs';
import { OPTION_TABLE } from './option-table.js';

/** The cells of the table under the README's "### Options" heading, header row first. */
function readmeOptionsTable(): string[][] {
  const readme = readFileSync(new URL('../../../../README.md', import.meta.url), 'utf8');
  const [, section = ''] = readme.split('\n### Options\n');
  const lines = section.trimStart().split('\n');
  const table = lines.slice(
    0,
    lines.findIndex((line) => !line.startsWith('|')),
  );
  return table
    .filter((_, index) => index !== 1) // the |---|---| line
    .map((line) =>
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
}

describe("the README's options table", () => {
  it('lists every option of OPTION_TABLE in its order, with its default and meaning', () => {
    expect(readmeOptionsTable()).toEqual([
      ['option', 'default', 'meaning'],
      ...Object.entries(OPTION_TABLE).map(([name, entry]) => [
        `\`${name}\``,
        entry.default,
        entry.doc,
      ]),
    ]);
  });
});
