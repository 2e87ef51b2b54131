import type { Browser } from 'playwright-core';
import { CronPlannerService, JobsAdminModule } from 'nestjs-pg-jobs';
import { launchChromium } from './support/chromium.js';
import { startHttpJobsApp } from './support/http-app.js';
import type { HttpJobsApp } from './support/http-app.js';
import { waitFor } from './support/jobs-app.js';
import { executions, recording } from './support/recorder.js';
import { useTestDatabase } from './support/test-database.js';

const db = useTestDatabase('jobs_dashboard_schedules');
const UI_TIMEOUT = 20_000;

let server: HttpJobsApp;
let browser: Browser;
beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ path: 'jobs-admin', guard: { canActivate: () => true } })],
    ...recording('dashboard'),
    options: {
      pollingCheck: 0.1,
      schedules: [{ name: 'hourly', task: 'record', cron: '0 * * * *', payload: { from: 'page' } }],
    },
  });
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

it('pauses, runs now and resumes a schedule from its row of the dashboard', async () => {
  const planner = server.app.get(CronPlannerService);
  const paused = async () => (await planner.listSchedules())[0].paused;
  const page = await browser.newPage({ viewport: { width: 1200, height: 1400 } });
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  await page.goto(`${server.url}/jobs-admin`);
  const row = page.locator('#schedules tr', { hasText: 'hourly' });
  await row.waitFor({ timeout: UI_TIMEOUT });

  await row.locator('button[data-action="pause"]').click();
  await row.locator('button[data-action="resume"]').waitFor({ timeout: UI_TIMEOUT });
  expect(await paused()).toBe(true);
  await expect(row.textContent()).resolves.toContain('paused');

  await row.locator('button[data-action="trigger"]').click();
  await waitFor('the run started from the page', () =>
    executions.some((run) => (run.payload as { from?: string }).from === 'page'),
  );

  await row.locator('button[data-action="resume"]').click();
  await row.locator('button[data-action="pause"]').waitFor({ timeout: UI_TIMEOUT });
  expect(await paused()).toBe(false);
  expect(problems).toEqual([]);
  await page.close();
});
