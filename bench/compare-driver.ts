/**
 * One workload of `bench/library.ts`, on a database the caller made, printed as JSON on the last
 * line: what `bench/compare.ts` runs in the checkout of each revision it compares. It uses only
 * what `library` has offered since the first bench (`drain`, `latency`), so that it runs against
 * old revisions too (it is copied into their checkout).
 *
 * Usage: compare-driver.ts drain <url> <concurrency> | latency <url>
 */
import 'reflect-metadata';
import { library } from './library.js';

const [workload, url, concurrency] = process.argv.slice(2);
const value =
  workload === 'drain'
    ? await library.drain(url, Number(concurrency), 1)
    : await library.latency(url);
console.log(JSON.stringify(value));
