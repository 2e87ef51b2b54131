import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { PREVIEW_CHARS } from '../../libs/jobs/src/admin/admin.sql.js';
import { ARTIFACTS, UI_TIMEOUT, useDashboard } from '../support/dashboard.js';
import { waitFor } from '../support/jobs-app.js';
import { LifeTask } from '../support/life-task.js';

const dashboard = useDashboard(
  { tasks: [LifeTask], options: { pollingCheck: 0.1 } },
  'jobs_dashboard_life',
);
const HOUR = 3600_000;

let page: Page;
let problems: string[];
// One page for the file: this Chromium runs as a single process, which its last page's close ends.
beforeAll(async () => ({ page, problems } = await dashboard.openPage()));
beforeEach(() => page.goto(`${dashboard.server.url}/jobs-admin`));
// No script error and no content-security-policy violation on the way.
afterEach(() => expect(problems).toEqual([]));

/** Opens the job's details from its row in the list `list`; returns the dialog. */
async function openJob(list: string, id: string) {
  await page.locator(`#${list} tr[data-job-id="${id}"] td`).first().click({ timeout: UI_TIMEOUT });
  const dialog = page.locator('#job');
  await dialog.locator('#job-title', { hasText: id }).waitFor({ timeout: UI_TIMEOUT });
  return dialog;
}

async function closeJob() {
  await page.locator('#job-close').click();
  await page.locator('#job').waitFor({ state: 'hidden', timeout: UI_TIMEOUT });
}

const text = (selector: string) => page.locator(selector).textContent();

it("shows a job's result cut in the list and whole in its details, as text, never as HTML", async () => {
  const markup =
    '<script>window.injected = true</script><img src="x" onerror="window.injected = true">';
  // jsonb keeps shorter keys first: the markup is in the list's preview too.
  const result = { a: markup, rest: 'y'.repeat(300) };
  const { id } = await dashboard.server.queue.addJob({ task: 'life', payload: { result } });
  await waitFor(
    'the job to complete',
    async () => (await dashboard.server.queue.getJob(id))?.state === 'completed',
  );
  const preview = page.locator(`#completed tr[data-job-id="${id}"] code`);
  await preview.waitFor({ timeout: UI_TIMEOUT });
  const asText = `{"a": ${JSON.stringify(markup)}, "rest": "${result.rest}"}`;
  expect(await preview.textContent()).toBe(asText.slice(0, PREVIEW_CHARS - 1) + '…');

  const dialog = await openJob('completed', id);
  const shown = await dialog.locator('tr[data-field="Result"]').locator('pre').textContent();
  expect(JSON.parse(shown!)).toEqual(result);
  expect(await dialog.locator('tr[data-field="State"] .state-completed').textContent()).toBe(
    'completed',
  );
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-job-details.png'), fullPage: true });
  // The markup is text: no element was made of it, and nothing of it ran.
  expect(
    await page.locator('#job script, #job img, #completed script, #completed img').count(),
  ).toBe(0);
  expect(await page.evaluate('window.injected')).toBeUndefined();
  await closeJob();
}, 60_000);

it('shows a snoozed job as snoozed until its time, in the pending list, the counts and its details', async () => {
  const { id } = await dashboard.server.queue.addJob({ task: 'life', payload: { snooze: 3600 } });
  const row = page.locator(`#pending tr[data-job-id="${id}"]`);
  await row.locator('td', { hasText: 'snoozed until' }).waitFor({ timeout: UI_TIMEOUT });
  const due = new Date((await dashboard.server.queue.getJob(id))!.waitUntil!);
  expect(due.getTime()).toBeGreaterThan(Date.now() + HOUR - 60_000);
  await waitFor(
    'the snoozed count',
    async () => (await text('#total-snoozed')) === '1',
    UI_TIMEOUT,
    100,
  );
  // The task's line: Task, Pending, Blocked, Due, Active, Completed, Failed, Cancelled, Snoozed, ...
  const cells = await page
    .locator('#tasks tr', { hasText: 'life' })
    .locator('td')
    .allTextContents();
  expect(cells.slice(0, 9)).toEqual(['life', '1', '0', '0', '0', '1', '0', '0', '1']);

  const dialog = await openJob('pending', id);
  expect(await dialog.locator('tr[data-field="Last attempt"] .state-snoozed').textContent()).toBe(
    'snoozed',
  );
  expect(await dialog.locator('tr[data-field="Due"]').textContent()).toContain('snoozed until');
  expect(await dialog.locator('tr[data-field="Snoozed"] td').textContent()).toBe('once');
  await closeJob();

  // A job that snoozed twice, then completed, says how many times.
  const twice = await dashboard.server.queue.addJob({
    task: 'life',
    payload: { snooze: 0, times: 2 },
  });
  await page.locator(`#completed tr[data-job-id="${twice.id}"]`).waitFor({ timeout: UI_TIMEOUT });
  const completed = await openJob('completed', twice.id);
  expect(await completed.locator('tr[data-field="Snoozed"] td').textContent()).toBe('2 times');
  await closeJob();
}, 60_000);

it('shows a job cancelled from the page as cancelled, distinct from the other states', async () => {
  const { id } = await dashboard.server.queue.addJob({
    task: 'life',
    waitUntil: new Date(Date.now() + HOUR),
  });
  await page
    .locator(`#pending tr[data-job-id="${id}"] button[data-action="cancel"]`)
    .click({ timeout: UI_TIMEOUT });
  await page.locator(`#cancelled tr[data-job-id="${id}"]`).waitFor({ timeout: UI_TIMEOUT });
  await waitFor(
    'the cancelled count',
    async () => (await text('#total-cancelled')) === '1',
    UI_TIMEOUT,
    100,
  );

  const dialog = await openJob('cancelled', id);
  const badge = dialog.locator('tr[data-field="State"] .state-cancelled');
  expect(await badge.textContent()).toBe('cancelled');
  expect(
    await dialog.locator('tr[data-field="Cancelled at"]').locator('td').textContent(),
  ).not.toBe('');
  // The badge of every state as the page styles it (the test has no DOM types: the probe is text).
  const colours = (state: string) =>
    page.evaluate<string>(`(() => {
      const probe = document.createElement('span');
      probe.className = 'state state-${state}';
      document.body.append(probe);
      const { color, backgroundColor } = getComputedStyle(probe);
      probe.remove();
      return color + ' on ' + backgroundColor;
    })()`);
  const cancelled = await colours('cancelled');
  for (const other of [
    'pending',
    'active',
    'completed',
    'failed',
    'interrupted',
    'skipped',
    'snoozed',
  ]) {
    expect(await colours(other)).not.toBe(cancelled);
  }
  await closeJob();
}, 60_000);
