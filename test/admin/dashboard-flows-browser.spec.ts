import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { AddedFlow, JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { ARTIFACTS, UI_TIMEOUT, useDashboard } from '../support/dashboard.js';
import { waitFor } from '../support/jobs-app.js';

/** Held until its attempt is aborted (the flow's cancel): then it completes, from then on at once. */
let release!: () => void;
const released = new Promise<void>((resolve) => (release = resolve));

@JobTask({ name: 'pickOrder', maxRetries: 0 })
@Injectable()
class PickOrder implements JobTaskHandler<{ held?: boolean }> {
  async run(payload: { held?: boolean }, ctx: JobContext) {
    if (payload.held) {
      ctx.signal.addEventListener('abort', release);
      await released;
    }
    return { picked: true };
  }
}

const dashboard = useDashboard({ tasks: [PickOrder], options: { pollingCheck: 0.1 } });

const statesOf = async (flow: AddedFlow) =>
  Object.fromEntries(
    await Promise.all(
      Object.entries(flow.jobs).map(async ([ref, id]) => [
        ref,
        (await dashboard.server.queue.getJob(id))?.state,
      ]),
    ),
  );

it('shows a flow with its jobs, cancels it and retries it from the page, and a big flow in part', async () => {
  const flow = await dashboard.server.queue.addFlow({
    name: 'order-7',
    jobs: [
      { ref: 'pick', task: 'pickOrder', payload: { held: true } },
      { ref: 'pack', task: 'pickOrder', dependsOn: ['pick'] },
      { ref: 'ship', task: 'pickOrder', dependsOn: ['pack'] },
    ],
  });
  await waitFor('pick to run', async () => (await statesOf(flow)).pick === 'active');

  const { page, problems } = await dashboard.openPage();
  const row = page.locator(`#flows tr[data-flow-id="${flow.flowId}"]`);
  await row.waitFor({ timeout: UI_TIMEOUT });
  await expect(row.textContent()).resolves.toMatch(/order-7.*0\/3 completed.*running/);
  await expect(row.textContent()).resolves.toContain('blocked 2, active 1');
  await page.locator('#total-blocked', { hasText: /^2$/ }).waitFor({ timeout: UI_TIMEOUT });

  // Its jobs, with their dependencies and states.
  await row.click();
  const shipRow = page.locator(`#flow-jobs tr[data-job-id="${flow.jobs.ship}"]`);
  await shipRow.waitFor({ timeout: UI_TIMEOUT });
  await expect(shipRow.textContent()).resolves.toMatch(/ship.*pickOrder\s*blocked\s*pack$/);
  await expect(page.locator('#flow-title').textContent()).resolves.toContain('order-7');
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-flow.png'), fullPage: true });

  // A cancel asks first: dismissed, nothing happens.
  page.once('dialog', (dialog) => void dialog.dismiss());
  await page.locator('#flow-cancel').click();
  expect(await statesOf(flow)).toEqual({ pick: 'active', pack: 'blocked', ship: 'blocked' });

  page.once('dialog', (dialog) => {
    expect(dialog.message()).toBe('Cancel flow order-7?');
    void dialog.accept();
  });
  await page.locator('#flow-cancel').click();
  await page
    .locator('#note', { hasText: 'Flow order-7: 3 job(s) cancelled.' })
    .waitFor({ timeout: UI_TIMEOUT });
  expect(await statesOf(flow)).toEqual({ pick: 'cancelled', pack: 'cancelled', ship: 'cancelled' });
  await page.locator('#flow-state', { hasText: 'cancelled 3' }).waitFor({ timeout: UI_TIMEOUT });
  await row.filter({ hasText: 'cancelled' }).waitFor({ timeout: UI_TIMEOUT });

  page.once('dialog', (dialog) => void dialog.accept());
  await page.locator('#flow-retry').click();
  await page
    .locator('#note', { hasText: 'Flow order-7: 3 job(s) queued again.' })
    .waitFor({ timeout: UI_TIMEOUT });
  await row.filter({ hasText: /3\/3 completed.*completed/ }).waitFor({ timeout: UI_TIMEOUT });
  await shipRow.filter({ hasText: 'completed' }).waitFor({ timeout: UI_TIMEOUT });
  expect(await statesOf(flow)).toEqual({ pick: 'completed', pack: 'completed', ship: 'completed' });
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-flow-retried.png'), fullPage: true });

  // A flow job's page, found by its id, links to its flow.
  await page.goto(`${dashboard.server.url}/jobs-admin?id=${flow.jobs.ship}`);
  await expect(page.locator('#flow').isHidden()).resolves.toBe(true);
  await page
    .locator(`#search-results tr[data-job-id="${flow.jobs.ship}"] td`)
    .first()
    .click({ timeout: UI_TIMEOUT });
  await page.locator('#job tr[data-field="Flow"] button').click({ timeout: UI_TIMEOUT });
  await page.locator('#job').waitFor({ state: 'hidden', timeout: UI_TIMEOUT });
  await page.locator('#flow-title', { hasText: 'order-7' }).waitFor({ timeout: UI_TIMEOUT });
  await expect(shipRow.textContent()).resolves.toMatch(/ship.*pickOrder\s*completed\s*pack$/);

  // A big flow: the page draws its first 200 jobs and says how many it leaves out.
  const later = new Date(Date.now() + 3600_000);
  const big = await dashboard.server.queue.addFlow({
    name: 'big',
    jobs: Array.from({ length: 205 }, (_, i) => ({
      ref: `item-${i}`,
      task: 'pickOrder',
      waitUntil: later,
    })),
  });
  await page.locator(`#flows tr[data-flow-id="${big.flowId}"]`).click({ timeout: UI_TIMEOUT });
  await page
    .locator('#flow-more', { hasText: 'and 5 more job(s), not shown' })
    .waitFor({ timeout: UI_TIMEOUT });
  expect(await page.locator('#flow-jobs tr').count()).toBe(200);

  // No script error and no content-security-policy violation on the way.
  expect(problems).toEqual([]);
  await page.close();
});
