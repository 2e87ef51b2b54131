import { CronPlannerService } from 'nestjs-pg-jobs';
import { UI_TIMEOUT, useDashboard } from '../support/dashboard.js';
import { waitFor } from '../support/jobs-app.js';
import { executions, recording } from '../support/recorder.js';

const dashboard = useDashboard(
  {
    ...recording('dashboard'),
    options: {
      pollingCheck: 0.1,
      schedules: [{ name: 'hourly', task: 'record', cron: '0 * * * *', payload: { from: 'page' } }],
    },
  },
  'jobs_dashboard_schedules',
);

it('pauses, runs now and resumes a schedule from its row of the dashboard', async () => {
  const planner = dashboard.server.app.get(CronPlannerService);
  const paused = async () => (await planner.listSchedules())[0].paused;
  const { page, problems } = await dashboard.openPage();
  const row = page.locator('#schedules tr', { hasText: 'hourly' });
  await row.waitFor({ timeout: UI_TIMEOUT });

  await row.locator('button[data-action="pause"]').click();
  await row.locator('button[data-action="resume"]').waitFor({ timeout: UI_TIMEOUT });
  expect(await paused()).toBe(true);
  await expect(row.textContent()).resolves.toContain('paused');

  await row.locator('button[data-action="trigger"]').click();
  const run = await waitFor('the run started from the page', () =>
    executions.find((execution) => (execution.payload as { from?: string }).from === 'page'),
  );
  // The run is the schedule's last: a badge of its state, which opens the job and its slot.
  const lastRun = row.locator(`.last-runs button.job-link[data-job-id="${run.id}"]`);
  await row
    .locator(`.last-runs [data-job-id="${run.id}"][data-slot-state="completed"]`)
    .waitFor({ timeout: UI_TIMEOUT });
  expect(await lastRun.textContent()).toBe('completed');
  await lastRun.click();
  const slotField = page.locator('#job-fields tr[data-field="Schedule"]');
  await slotField.waitFor({ timeout: UI_TIMEOUT });
  expect(await slotField.textContent()).toMatch(/^ScheduleFrom schedule hourly, slot \S/);
  await page.locator('#job-close').click();
  await page.locator('#job').waitFor({ state: 'hidden', timeout: UI_TIMEOUT });

  await row.locator('button[data-action="resume"]').click();
  await row.locator('button[data-action="pause"]').waitFor({ timeout: UI_TIMEOUT });
  expect(await paused()).toBe(false);
  expect(problems).toEqual([]);
  await page.close();
});
