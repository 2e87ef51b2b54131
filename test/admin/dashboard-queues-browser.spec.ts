import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { MinuteStatsRecorder } from '../../libs/jobs/src/minute-stats/minute-stats-recorder.js';
import { ARTIFACTS, UI_TIMEOUT, useDashboard } from '../support/dashboard.js';

@JobTask({ name: 'importRows', queue: 'imports' })
@Injectable()
class ImportRows implements JobTaskHandler {
  run(): void {}
}

const dashboard = useDashboard({
  tasks: [ImportRows],
  options: { pollingCheck: 0.1, queues: { imports: { globalConcurrency: 2 } } },
});

it('shows each queue with its counts, limits and depth chart, and pauses and resumes it on a click', async () => {
  const { page, problems } = await dashboard.openPage();

  const row = page.locator('#queues tr[data-queue="imports"]');
  await row.waitFor({ timeout: UI_TIMEOUT });
  await expect(row.textContent()).resolves.toMatch(/imports\s*running.*2 in the cluster/);

  await row.locator('button[data-queue-action="pause"]').click();
  await row.locator('button[data-queue-action="resume"]').waitFor({ timeout: UI_TIMEOUT });
  await expect(row.textContent()).resolves.toContain('paused');
  expect(
    (await dashboard.server.queue.getQueues()).find((queue) => queue.name === 'imports')?.paused,
  ).toBe(true);
  await dashboard.server.queue.addJob({ task: 'importRows' });
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

  // The queue's name finds its jobs in place, the search in the address to share.
  await row.locator('a.find-link', { hasText: /^imports$/ }).click();
  const found = page.locator('#search-results tr[data-job-id]');
  await found.first().waitFor({ timeout: UI_TIMEOUT });
  expect(new URL(page.url()).searchParams.get('queue')).toBe('imports');
  await expect(page.locator('#search-queue').inputValue()).resolves.toBe('imports');
  for (const text of await found.allTextContents()) expect(text).toContain('importRows');

  // The queue's depth chart, from the minutes written: five jobs wait in the paused queue.
  await dashboard.server.queue.pauseQueue('imports');
  await dashboard.server.queue.addJobs(Array.from({ length: 5 }, () => ({ task: 'importRows' })));
  // Minutes before this instance booted: its own writer never took them.
  const recorder = dashboard.server.app.get(MinuteStatsRecorder);
  for (const ago of [5, 4, 3]) {
    const [{ minute }] = await dashboard.db.query<{ minute: Date }>(
      `SELECT date_trunc('minute', now()) - make_interval(mins => $1) AS minute`,
      [ago],
    );
    await recorder.writeMinute(minute);
  }
  const depth = page.locator('#depth-chart');
  const bars = page.locator('#depth-chart rect');
  // Over 24 h the minutes are drawn ten to a bar: the three fall in one or two bars.
  await page.getByLabel('last 24 h').check();
  await page
    .locator('#depth-chart[aria-label$="over the last 24 hours"]')
    .waitFor({ timeout: UI_TIMEOUT });
  expect(await bars.count()).toBeGreaterThanOrEqual(1);
  expect(await bars.count()).toBeLessThanOrEqual(2);
  // Over the hour, a bar a minute.
  await page.locator('input[name="depth-window"][value="60"]').check();
  await page
    .locator('#depth-chart[aria-label$="over the last hour"]')
    .waitFor({ timeout: UI_TIMEOUT });
  await expect(depth.getAttribute('aria-label')).resolves.toBe(
    'Depth of queue imports at the end of each minute, over the last hour',
  );
  expect(await bars.count()).toBe(3);
  await expect(bars.first().locator('title').textContent()).resolves.toMatch(
    /: 5 pending \(5 due\), 0 blocked, 0 running$/,
  );
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-queue-depth.png'), fullPage: true });
  await dashboard.server.queue.resumeQueue('imports');
  expect(problems).toEqual([]);
  // Closed here: a page left open keeps polling while the test database is dropped.
  await page.close();
});
