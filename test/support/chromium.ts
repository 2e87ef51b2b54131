import { existsSync } from 'node:fs';
import sparticuz from '@sparticuz/chromium';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';

/** Debian's Chromium, used when the machine has it (`apt-get install chromium`). */
export const SYSTEM_CHROMIUM = '/usr/bin/chromium';

/**
 * The machine sends nothing anywhere: no update checks, sync or QUIC probes that would wait on a
 * network the tests do not have.
 */
const QUIET_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * `@sparticuz/chromium`'s flags are meant for a serverless sandbox, and two of them would switch
 * off the very protections the dashboard test checks (its content security policy, same-origin
 * requests): the page must run as a user's browser would run it.
 */
const UNSAFE_FLAGS = new Set(['--disable-web-security', '--allow-running-insecure-content']);

/**
 * Launches `/usr/bin/chromium` if present, else the headless Chromium shipped in the
 * `@sparticuz/chromium` dev dependency, so the browser test needs only Node and `npm ci`
 * (playwright-core cannot download browsers here). The package unpacks its binary into the
 * temporary folder on first use (about 2 s), not at install: it needs no install script.
 */
export async function launchChromium(): Promise<Browser> {
  if (existsSync(SYSTEM_CHROMIUM)) {
    return chromium.launch({
      executablePath: SYSTEM_CHROMIUM,
      timeout: 30_000,
      args: ['--headless', ...QUIET_FLAGS],
    });
  }
  // The dashboard draws no WebGL, and SwiftShader's GL flags would contradict `--disable-gpu`.
  sparticuz.setGraphicsMode = false;
  return chromium.launch({
    executablePath: await sparticuz.executablePath(),
    timeout: 30_000,
    args: [...sparticuz.args.filter((flag) => !UNSAFE_FLAGS.has(flag)), ...QUIET_FLAGS],
  });
}
