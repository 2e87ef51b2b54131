// Prints the options table of docs/options.md from OPTION_TABLE (libs/jobs/src/options/option-table.ts),
// where each option's default, meaning and check are defined together; with `--write`, replaces
// the table under the "# Options" heading of docs/options.md. `option-table.spec.ts` fails while the two differ.
//
//   node --import ./tools/ts-loader/register.mjs tools/options-table.ts [--write]
import { readFileSync, writeFileSync } from 'node:fs';
import { OPTION_TABLE } from '../libs/jobs/src/options/option-table.js';

const rows = [
  ['option', 'default', 'meaning'],
  ...Object.entries(OPTION_TABLE).map(([name, entry]) => [`\`${name}\``, entry.default, entry.doc]),
];
// Padded as Prettier pads a Markdown table, so that `prettier --check` accepts it as printed.
const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
const line = (cells: string[]) =>
  `| ${cells.map((cell, column) => cell.padEnd(widths[column])).join(' | ')} |`;
const table = [
  line(rows[0]),
  line(widths.map((width) => '-'.repeat(width))),
  ...rows.slice(1).map(line),
];

if (process.argv.includes('--write')) {
  const pageUrl = new URL('../docs/options.md', import.meta.url);
  const page = readFileSync(pageUrl, 'utf8').split('\n');
  const start = page.findIndex(
    (text, index) => text.startsWith('| option') && page[index - 2] === '# Options',
  );
  if (start < 0) throw new Error('docs/options.md has no table right under "# Options"');
  let end = start;
  while (page[end]?.startsWith('|')) end++;
  page.splice(start, end - start, ...table);
  writeFileSync(pageUrl, page.join('\n'));
  console.log(`docs/options.md: options table rewritten (${rows.length - 1} options)`);
} else {
  console.log(table.join('\n'));
}
