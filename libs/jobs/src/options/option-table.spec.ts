import { readFileSync } from 'node:fs';
import { OPTION_TABLE } from './option-table.js';

/** The cells of the table under the "# Options" heading of docs/options.md, header row first. */
function documentedOptionsTable(): string[][] {
  const page = readFileSync(new URL('../../../../docs/options.md', import.meta.url), 'utf8');
  const [, section = ''] = page.split(/^# Options\n/m);
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

describe("docs/options.md's options table", () => {
  it('lists every option of OPTION_TABLE in its order, with its default and meaning', () => {
    expect(documentedOptionsTable()).toEqual([
      ['option', 'default', 'meaning'],
      ...Object.entries(OPTION_TABLE).map(([name, entry]) => [
        `\`${name}\``,
        entry.default,
        entry.doc,
      ]),
    ]);
  });
});
