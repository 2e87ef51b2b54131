#!/usr/bin/env node
// The `nestjs-pg-jobs` command of the published package (`bin`): `npx nestjs-pg-jobs --help`.
import { runCli } from './cli/run-cli.js';

process.exitCode = await runCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
});
