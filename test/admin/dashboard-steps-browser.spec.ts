import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { ARTIFACTS, UI_TIMEOUT, useDashboard } from '../support/dashboard.js';
import { waitFor } from '../support/jobs-app.js';

/** A step, then a sleep of an hour: it stays suspended while the test looks. */
@JobTask('stepThenSleep')
@Injectable()
class StepThenSleepTask implements JobTaskHandler {
  async run(_payload: unknown, ctx: JobContext) {
    await ctx.step('load', () => ({ loaded: true }));
    await ctx.sleep('cool-off', 3600);
  }
}

const dashboard = useDashboard(
  { tasks: [StepThenSleepTask], options: { pollingCheck: 0.1 } },
  'jobs_dashboard_steps',
);

it('lists a suspended job, and shows its steps and what it waits for in its details', async () => {
  const { id } = await dashboard.server.queue.addJob({ task: 'stepThenSleep' });
  await waitFor(
    'the job to be suspended',
    async () => (await dashboard.server.queue.getJob(id))?.state === 'suspended',
  );
  const { page, problems } = await dashboard.openPage();
  const listed = page.locator(`#suspended tr[data-job-id="${id}"]`);
  await listed.waitFor({ timeout: UI_TIMEOUT });
  expect(await listed.innerText()).toContain('stepThenSleep');

  await listed.locator('td').first().click();
  const dialog = page.locator('#job');
  await dialog.locator('#job-title', { hasText: id }).waitFor({ timeout: UI_TIMEOUT });
  expect(await dialog.locator('.state-suspended').first().textContent()).toBe('suspended');
  expect(await dialog.locator('tr[data-field="Waits for"] td').textContent()).toMatch(
    /^its sleep, until /,
  );
  const steps = dialog.locator('tr[data-field="Steps"] li');
  expect(await steps.count()).toBe(2);
  expect(await steps.nth(0).getAttribute('data-step')).toBe('load');
  expect(await steps.nth(0).locator('.state').textContent()).toBe('completed');
  expect(await steps.nth(1).getAttribute('data-step')).toBe('cool-off');
  expect(await steps.nth(1).locator('.state').textContent()).toBe('running');
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-steps.png'), fullPage: true });
  expect(problems).toEqual([]);
  await page.close();
  expect(await dashboard.server.queue.cancelJob(id)).toBe(true);
}, 60_000);
