// Runs the TypeScript sources directly (the example app, benchmarks, worker threads under tests).
// Worker threads inherit `--import`, so they register the same hooks.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
