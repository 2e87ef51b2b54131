import type { Page, Response } from 'playwright-core';
import { UI_TIMEOUT, useDashboard } from '../support/dashboard.js';

const dashboard = useDashboard(
  { options: { allowUnknownTasks: true, pollingCheck: 0.1 } },
  'jobs_dashboard_live',
);

const PENDING_POLL = '/jobs-admin/api/jobs?state=pending&limit=50';

/** A pending job of a task nobody runs, due in an hour: it stays in the Pending table. */
const enqueue = () =>
  dashboard.server.queue.addJob({
    task: 'nobodyRunsThis',
    waitUntil: new Date(Date.now() + 3600_000),
  });

/** The next answer to the page's poll of the pending jobs, with `status`. */
const nextPoll = (page: Page, status: number): Promise<Response> =>
  page.waitForResponse(
    (response) => response.url().endsWith(PENDING_POLL) && response.status() === status,
    { timeout: UI_TIMEOUT },
  );

it('leaves an unchanged table as it is between polls (its focused row keeps its focus), and draws a change', async () => {
  const { id } = await enqueue();
  const { page, problems } = await dashboard.openPage();
  const row = `#pending tr[data-job-id="${id}"]`;
  await page.locator(row).waitFor({ timeout: UI_TIMEOUT });
  // The test has no DOM types: the page's code is text. The row is kept aside, to compare.
  await page.evaluate(`(() => {
    window.heldRow = document.querySelector('${row}');
    window.heldRow.focus();
  })()`);
  const held = () =>
    page.evaluate(
      `[window.heldRow.isConnected, document.activeElement === window.heldRow, document.querySelectorAll('#pending tr[data-job-id]').length]`,
    );
  expect(await held()).toEqual([true, true, 1]);

  // Two polls that found the list as it was: answered 304, with the tag the page held.
  for (let poll = 0; poll < 2; poll++) {
    const answer = await nextPoll(page, 304);
    expect(await answer.request().headerValue('if-none-match')).toBe(
      await answer.headerValue('etag'),
    );
  }
  expect(await held()).toEqual([true, true, 1]);

  // A change: the next poll is a 200 with a new tag, and the table is drawn again with it.
  const { id: added } = await enqueue();
  const changed = await nextPoll(page, 200);
  expect(await changed.request().headerValue('if-none-match')).not.toBe(
    await changed.headerValue('etag'),
  );
  await page.locator(`#pending tr[data-job-id="${added}"]`).waitFor({ timeout: UI_TIMEOUT });
  expect(await held()).toEqual([false, false, 2]);
  expect(problems).toEqual([]);
}, 60_000);
