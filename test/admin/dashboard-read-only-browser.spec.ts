import { UI_TIMEOUT, useDashboard } from '../support/dashboard.js';
import { FlakyTask } from '../support/flaky-task.js';
import { waitFor } from '../support/jobs-app.js';

const dashboard = useDashboard(
  { tasks: [FlakyTask], options: { pollingCheck: 0.1, maxRetries: 0 } },
  'jobs_dashboard_read_only',
  { readOnly: true },
);

it('shows a read-only viewer every job, and no button that acts', async () => {
  const { id } = await dashboard.server.queue.addJob({
    task: 'flaky',
    payload: { failUntilAttempt: 1, message: 'look, do not touch' },
  });
  await waitFor(
    'the job to fail',
    async () => (await dashboard.server.queue.getJob(id))?.state === 'failed',
  );
  const { page, problems } = await dashboard.openPage();
  await page.locator('#mode', { hasText: 'read-only' }).waitFor({ timeout: UI_TIMEOUT });
  const row = page.locator(`#failed tr[data-job-id="${id}"]`);
  await row.waitFor({ timeout: UI_TIMEOUT });
  await expect(row.locator('button[data-action="retry"]').isHidden()).resolves.toBe(true);
  await expect(page.locator('[data-queue-action]').first().isHidden()).resolves.toBe(true);

  await page.goto(`${dashboard.server.url}/jobs-admin?state=failed`);
  await page
    .locator('#search-count', { hasText: '1 job matches.' })
    .waitFor({ timeout: UI_TIMEOUT });
  await expect(page.locator('#search-retry').isHidden()).resolves.toBe(true);
  await expect(page.locator('#search-retry').textContent()).resolves.toBe('Retry all 1');
  expect(problems).toEqual([]);
}, 60_000);

it('asks nothing while its tab is in the background, and catches up when it comes back', async () => {
  const { page, problems } = await dashboard.openPage();
  const polls: number[] = [];
  page.on('request', (request) => {
    if (request.url().endsWith('/jobs-admin/api/stats')) polls.push(Date.now());
  });
  await page.waitForRequest((request) => request.url().endsWith('/api/stats'), {
    timeout: UI_TIMEOUT,
  });
  // The test has no DOM types: the page's code is text.
  const setHidden = (hidden: boolean) =>
    page.evaluate(`(() => {
      Object.defineProperty(document, 'hidden', { value: ${hidden}, configurable: true });
      document.dispatchEvent(new Event('visibilitychange'));
    })()`);
  await setHidden(true);
  const hiddenAt = Date.now();
  // Two polling periods (2 s each) go by without a poll.
  await page.waitForTimeout(4500);
  expect(polls.filter((at) => at > hiddenAt + 100)).toEqual([]);
  const back = page.waitForRequest((request) => request.url().endsWith('/api/stats'), {
    timeout: 1000,
  });
  await setHidden(false);
  await back;
  expect(problems).toEqual([]);
}, 60_000);
