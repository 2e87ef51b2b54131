// Prints the README's options table from OPTION_TABLE (libs/jobs/src/options/option-table.ts),
// where each option's default, meaning and check are defined together; with `--write`, replaces
// the table under "### Options" in README.md. `option-table.spec.ts` fails while the two differ.
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
  const readmeUrl = new URL('../README.md', import.meta.url);
  const readme = readFileSync(readmeUrl, 'utf8').split('\n');
  const start = readme.findIndex(
    (text, index) => text.startsWith('| option') && readme[index - 2] === '### Options',
  );
  if (start < 0) throw new Error('README.md has no table right under "### Options"');
  let end = start;
  while (readme[end]?.startsWith('|')) end++;
  readme.splice(start, end - start, ...table);
  writeFileSync(readmeUrl, readme.join('\n'));
  console.log(`README.md: options table rewritten (${rows.length - 1} options)`);
} else {
  console.log(table.join('\n'));
}
