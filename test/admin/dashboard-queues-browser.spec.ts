import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
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

it('shows each queue with its counts and limits, and pauses and resumes it on a click', async () => {
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
  expect(problems).toEqual([]);
  // Closed here: a page left open keeps polling while the test database is dropped.
  await page.close();
});
