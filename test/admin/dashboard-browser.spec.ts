import { join } from 'node:path';
import { ARTIFACTS, UI_TIMEOUT, useDashboard } from '../support/dashboard.js';
import { FlakyTask } from '../support/flaky-task.js';
import { waitFor } from '../support/jobs-app.js';

const dashboard = useDashboard({
  tasks: [FlakyTask],
  options: { pollingCheck: 0.1, maxRetries: 0 },
});

it("shows a failed job's error, retries it (and then all of a task's) on a click, and shows it completed", async () => {
  const { id } = await dashboard.server.queue.addJob({
    task: 'flaky',
    payload: { failUntilAttempt: 1, message: 'the printer is on fire' },
  });
  await waitFor(
    'the job to fail',
    async () => (await dashboard.server.queue.getJob(id))?.state === 'failed',
  );

  const { page, problems } = await dashboard.openPage();

  const failedRow = page.locator(`#failed tr[data-job-id="${id}"]`);
  await failedRow.waitFor({ timeout: UI_TIMEOUT });
  await expect(failedRow.textContent()).resolves.toContain('the printer is on fire');
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-failed-job.png'), fullPage: true });

  await failedRow.locator('button[data-action="retry"]').click();
  await page.locator(`#completed tr[data-job-id="${id}"]`).waitFor({ timeout: UI_TIMEOUT });
  await failedRow.waitFor({ state: 'detached', timeout: UI_TIMEOUT });
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-retried-job.png'), fullPage: true });

  expect(await dashboard.server.queue.getJob(id)).toMatchObject({ state: 'completed', attempt: 2 });
  // Each panel is read by its own request: the totals catch up by the next refresh at the latest.
  await waitFor(
    'the totals to count the completed job',
    async () => (await page.locator('#total-completed').textContent()) === '1',
    UI_TIMEOUT,
    100,
  );
  expect(await page.locator('#total-failed').textContent()).toBe('0');

  // And every failed job of the task at once, from its line of the task table.
  const failed = await Promise.all(
    [1, 2].map(
      async () =>
        (await dashboard.server.queue.addJob({ task: 'flaky', payload: { failUntilAttempt: 1 } }))
          .id,
    ),
  );
  for (const job of failed) {
    await waitFor(
      'the job to fail',
      async () => (await dashboard.server.queue.getJob(job))?.state === 'failed',
    );
  }
  await page
    .locator('#tasks tr', { hasText: 'flaky' })
    .locator('button[data-action="retry-failed"]')
    .click({ timeout: UI_TIMEOUT });
  await page
    .locator('#note', { hasText: '2 failed job(s) of flaky queued again.' })
    .waitFor({ timeout: UI_TIMEOUT });
  for (const job of failed) {
    await waitFor(
      'the job to complete',
      async () => (await dashboard.server.queue.getJob(job))?.state === 'completed',
    );
    expect(await dashboard.server.queue.getJob(job)).toMatchObject({ attempt: 2 });
  }
  // No script error and no content-security-policy violation on the way.
  expect(problems).toEqual([]);
  await page.close();
});
