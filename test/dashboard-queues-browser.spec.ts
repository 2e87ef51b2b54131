import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import type { Browser } from 'playwright-core';
import { JobTask, JobsAdminModule } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { launchChromium } from './support/chromium.js';
import { startHttpJobsApp } from './support/http-app.js';
import type { HttpJobsApp } from './support/http-app.js';
import { useTestDatabase } from './support/test-database.js';

const db = useTestDatabase();
const ARTIFACTS = join(process.cwd(), 'test-artifacts');
const UI_TIMEOUT = 20_000;

@JobTask({ name: 'importRows', queue: 'imports' })
@Injectable()
class ImportRows implements JobTaskHandler {
  run(): void {}
}

let server: HttpJobsApp;
let browser: Browser;
beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ path: 'jobs-admin', guard: { canActivate: () => true } })],
    tasks: [ImportRows],
    options: { pollingCheck: 0.1, queues: { imports: { globalConcurrency: 2 } } },
  });
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

it('shows each queue with its counts and limits, and pauses and resumes it on a click', async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 1400 } });
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  await page.goto(`${server.url}/jobs-admin`);

  const row = page.locator('#queues tr[data-queue="imports"]');
  await row.waitFor({ timeout: UI_TIMEOUT });
  await expect(row.textContent()).resolves.toMatch(/imports\s*running.*2 in the cluster/);

  await row.locator('button[data-queue-action="pause"]').click();
  await row.locator('button[data-queue-action="resume"]').waitFor({ timeout: UI_TIMEOUT });
  await expect(row.textContent()).resolves.toContain('paused');
  expect((await server.queue.getQueues()).find((queue) => queue.name === 'imports')?.paused).toBe(
    true,
  );
  await server.queue.addJob({ task: 'importRows' });
  // The pending job shows on the next refresh, and stays pending.
  await page
    .locator('#queues tr[data-queue="imports"] td:nth-child(3)', { hasText: /^1$/ })
    .waitFor({ timeout: UI_TIMEOUT });
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-paused-queue.png'), fullPage: true });

  await row.locator('button[data-queue-action="resume"]').click();
  await page
    .locator('#queues tr[data-queue="imports"] td:nth-child(3)', { hasText: /^0$/ })
    .waitFor({ timeout: UI_TIMEOUT });
  await expect(row.textContent()).resolves.toContain('running');
  expect(problems).toEqual([]);
  // Closed here: a page left open keeps polling while the test database is dropped.
  await page.close();
});
