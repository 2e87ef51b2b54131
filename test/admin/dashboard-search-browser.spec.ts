import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { ARTIFACTS, UI_TIMEOUT, useDashboard } from '../support/dashboard.js';
import { FlakyTask } from '../support/flaky-task.js';
import { waitFor } from '../support/jobs-app.js';

const dashboard = useDashboard(
  { tasks: [FlakyTask], options: { pollingCheck: 0.1, maxRetries: 0, concurrency: 4 } },
  'jobs_dashboard_search',
);
const REFUSED = 'connect ECONNREFUSED 10.0.0.1:5432';
const refused: string[] = [];
const full: string[] = [];

let page: Page;
let problems: string[];
beforeAll(async () => {
  const fail = async (message: string) =>
    (
      await dashboard.server.queue.addJob({
        task: 'flaky',
        payload: { failUntilAttempt: 1, message },
      })
    ).id;
  for (let i = 0; i < 8; i++) refused.push(await fail(REFUSED));
  for (let i = 0; i < 3; i++) full.push(await fail('disk full'));
  await waitFor('every job to fail', async () => {
    const [{ n }] = await dashboard.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs."jobHistory" WHERE state = 'failed'`,
    );
    return n === 11;
  });
  ({ page, problems } = await dashboard.openPage());
}, 60_000);
// No script error and no content-security-policy violation on the way.
afterEach(() => expect(problems).toEqual([]));

const base = () => `${dashboard.server.url}/jobs-admin`;
const stateOf = async (id: string) => (await dashboard.server.queue.getJob(id))?.state;
const rows = () => page.locator('#search-results tr[data-job-id]');

it('opens a shared link on its search, and retries every job like it in two clicks, once confirmed', async () => {
  await page.goto(`${base()}?state=failed&error=econnrefused`);
  await page
    .locator('#search-count', { hasText: '8 jobs match.' })
    .waitFor({ timeout: UI_TIMEOUT });
  expect((await rows().evaluateAll((trs) => trs.map((tr) => tr.dataset.jobId))).sort()).toEqual(
    [...refused].sort(),
  );
  // The form shows the search the link holds.
  expect(await page.locator('#search-state').inputValue()).toBe('failed');
  expect(await page.locator('#search-error').inputValue()).toBe('econnrefused');

  // Kept: the dialog's first button in focus is the one that does nothing.
  const retryAll = page.locator('#search-retry');
  await expect(retryAll.textContent()).resolves.toBe('Retry all 8');
  await retryAll.click();
  const dialog = page.locator('#bulk-confirm');
  await expect(dialog.locator('#bulk-text').textContent()).resolves.toBe(
    'Retry 8 failed job(s) matching state "failed", error "econnrefused"?',
  );
  // docs/dashboard-search.png is this screenshot.
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-search.png') });
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'hidden', timeout: UI_TIMEOUT });
  expect(await stateOf(refused[0])).toBe('failed');

  await retryAll.click();
  await dialog.locator('#bulk-yes', { hasText: 'Retry 8 failed job(s)' }).click();
  await page
    .locator('#note', { hasText: '8 job(s) queued again.' })
    .waitFor({ timeout: UI_TIMEOUT });
  // Their second attempts succeed; the jobs that failed otherwise were left alone.
  for (const id of refused) {
    await waitFor(`job ${id} to complete`, async () => (await stateOf(id)) === 'completed');
  }
  for (const id of full) expect(await stateOf(id)).toBe('failed');
  await page
    .locator('#search-count', { hasText: '0 jobs match.' })
    .waitFor({ timeout: UI_TIMEOUT });
  await expect(retryAll.isHidden()).resolves.toBe(true);
}, 60_000);

it("finds a job by the start of its id from the keyboard, puts the search in the address, and opens the job's page", async () => {
  await page.goto(base());
  const id = full[1];
  await page.locator('#search-id').fill(id.slice(0, 13));
  await page.locator('#search-id').press('Enter');
  await rows().first().waitFor({ timeout: UI_TIMEOUT });
  expect(new URL(page.url()).searchParams.get('id')).toBe(id.slice(0, 13));
  expect(await rows().evaluateAll((trs) => trs.map((tr) => tr.dataset.jobId))).toContain(id);
  // Bulk actions take no id: a search by id offers none.
  await expect(page.locator('#search-retry').isHidden()).resolves.toBe(true);

  // From the keyboard: the row takes the focus, and Enter opens the job.
  await page.locator(`#search-results tr[data-job-id="${id}"]`).focus();
  await page.keyboard.press('Enter');
  await page.locator('#job-title', { hasText: id }).waitFor({ timeout: UI_TIMEOUT });
  await expect(page.locator('#job tr[data-field="Last error"]').textContent()).resolves.toContain(
    'disk full',
  );
  // Its attempt, as recorded, with the stack of its error behind a disclosure.
  const attempt = page.locator('#job tr[data-field="Attempt log"] tr[data-attempt="1"]');
  await expect(attempt.textContent()).resolves.toMatch(/^1failed.*disk full/);
  await attempt.locator('summary').click();
  await expect(attempt.locator('details pre').textContent()).resolves.toMatch(
    /^Error: disk full\n\s+at /,
  );
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-job-attempts.png') });
  // Times in the viewer's zone, in UTC on hover.
  const time = page.locator('#search-results time').first();
  await expect(time.getAttribute('title')).resolves.toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
  await page.locator('#job-close').click();
}, 60_000);

it('finds a job by its unique key from the form, keeps the key in the address, and finds it again once it ran', async () => {
  const { id } = await dashboard.server.queue.addJob({
    task: 'flaky',
    uniqueKey: 'invoice 42',
    waitUntil: new Date(Date.now() + 3600_000),
  });
  await page.goto(base());
  await page.locator('#search-uniqueKey').fill('invoice 42');
  await page.locator('#search-uniqueKey').press('Enter');
  await page
    .locator('#search-count', { hasText: '1 job matches.' })
    .waitFor({ timeout: UI_TIMEOUT });
  expect(new URL(page.url()).searchParams.get('uniqueKey')).toBe('invoice 42');
  expect(await rows().evaluateAll((trs) => trs.map((tr) => tr.dataset.jobId))).toEqual([id]);

  await dashboard.db.query(`UPDATE jobs.jobs SET "waitUntil" = now() WHERE id = $1`, [id]);
  await waitFor('the job to complete', async () => (await stateOf(id)) === 'completed');
  // A shared link finds it in history, where the key stays once the job started.
  await page.goto(`${base()}?uniqueKey=${encodeURIComponent('invoice 42')}`);
  await page
    .locator(`#search-results tr[data-job-id="${id}"] .state-completed`)
    .waitFor({ timeout: UI_TIMEOUT });
  expect(await page.locator('#search-uniqueKey').inputValue()).toBe('invoice 42');
  await expect(rows().count()).resolves.toBe(1);
  // Its page shows the key, and its one attempt, completed.
  await page.locator(`#search-results tr[data-job-id="${id}"] td`).first().click();
  await page.locator('#job-title', { hasText: id }).waitFor({ timeout: UI_TIMEOUT });
  await expect(page.locator('#job tr[data-field="Unique key"] td').textContent()).resolves.toBe(
    'invoice 42',
  );
  await expect(
    page
      .locator('#job tr[data-field="Attempt log"] tbody tr')
      .evaluateAll((trs) => trs.map((tr) => tr.dataset.outcome)),
  ).resolves.toEqual(['completed']);
  await page.locator('#job-close').click();
}, 60_000);

it('runs a job that waits for its time from its page, which shows the getJob call for it', async () => {
  const { id } = await dashboard.server.queue.addJob({
    task: 'flaky',
    waitUntil: new Date(Date.now() + 3600_000),
  });
  await page.goto(`${base()}?id=${id}`);
  await page.locator(`#search-results tr[data-job-id="${id}"] td`).first().click();
  await page.locator('#job-title', { hasText: id }).waitFor({ timeout: UI_TIMEOUT });
  await expect(page.locator('#job-snippet').textContent()).resolves.toBe(
    `await queue.getJob('${id}');`,
  );
  await page.locator('#job-actions button[data-action="run"]').click();
  await page
    .locator('#note', { hasText: `Job ${id} is due now.` })
    .waitFor({ timeout: UI_TIMEOUT });
  await waitFor('the job to complete', async () => (await stateOf(id)) === 'completed');
  // Its page follows: completed, with nothing left to run or cancel.
  await page
    .locator('#job tr[data-field="State"] .state-completed')
    .waitFor({ timeout: UI_TIMEOUT });
  await expect(page.locator('#job-actions button').count()).resolves.toBe(0);
  await page.locator('#job-close').click();
}, 60_000);

it('lists the instance serving the page, with its last heartbeat, and the durations by task', async () => {
  await page.goto(base());
  const instance = page.locator('#instances tr[data-instance]');
  await instance.waitFor({ timeout: UI_TIMEOUT });
  await expect(instance.locator('td').nth(4).textContent()).resolves.toMatch(/^\d+ s ago$/);
  // And how long the task's jobs took, with its failure rate, over the last hour.
  const flaky = page.locator('#durations tr[data-task="flaky"] td');
  await flaky.first().waitFor({ timeout: UI_TIMEOUT });
  await expect(flaky.nth(3).textContent()).resolves.toMatch(/^\d+\.\d %$/);
  await expect(flaky.nth(4).textContent()).resolves.toMatch(/^\d+ ms$|^\d+\.\d s$/);
  // Over the last day: from the per-minute figures (history for the minutes not written yet), the
  // percentiles from their buckets, marked as estimates.
  await page.getByLabel('last day').check();
  await page
    .locator('#durations-window-label', { hasText: 'the last day' })
    .waitFor({ timeout: UI_TIMEOUT });
  await expect(flaky.nth(3).textContent()).resolves.toMatch(/^\d+\.\d %$/);
  await expect(flaky.nth(4).textContent()).resolves.toMatch(/^≈ (\d+ ms|\d+\.\d s)$/);
}, 60_000);

it('pages through every match with More, after the first fifty', async () => {
  await dashboard.db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "completedAt", "lastErrorMessage")
     SELECT gen_random_uuid(), 'nobody', 'failed', 1, 0, now(), now() - make_interval(secs => i), 'gone'
     FROM generate_series(1, 60) AS i`,
  );
  await page.goto(`${base()}?state=failed&task=nobody`);
  await page
    .locator('#search-count', { hasText: '60 jobs match.' })
    .waitFor({ timeout: UI_TIMEOUT });
  await expect(rows().count()).resolves.toBe(50);
  await page.locator('#search-more').click();
  await page.locator('#search-more').waitFor({ state: 'hidden', timeout: UI_TIMEOUT });
  const ids = await rows().evaluateAll((trs) => trs.map((tr) => tr.dataset.jobId));
  expect(ids).toHaveLength(60);
  expect(new Set(ids).size).toBe(60);
}, 60_000);

it('deletes every job of a search of an ended state, once a confirmation that states the count is accepted', async () => {
  await dashboard.db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "completedAt")
     SELECT gen_random_uuid(), 'obsolete', 'failed', 1, 0, now(), now() - interval '1 minute'
     FROM generate_series(1, 3)`,
  );
  await page.goto(`${base()}?state=failed&task=obsolete`);
  await page
    .locator('#search-count', { hasText: '3 jobs match.' })
    .waitFor({ timeout: UI_TIMEOUT });
  // Failed jobs can be retried or deleted, not cancelled.
  await expect(page.locator('#search-retry').textContent()).resolves.toBe('Retry all 3');
  await expect(page.locator('#search-cancel').isHidden()).resolves.toBe(true);
  const deleteAll = page.locator('#search-delete');
  await expect(deleteAll.textContent()).resolves.toBe('Delete all 3');
  await deleteAll.click();
  const dialog = page.locator('#bulk-confirm');
  await expect(dialog.locator('#bulk-text').textContent()).resolves.toBe(
    'Delete 3 failed job(s) matching state "failed", task "obsolete"? Jobs of a flow are kept: they go with their flow. A deleted job cannot be brought back.',
  );
  await dialog.locator('#bulk-yes', { hasText: 'Delete 3 failed job(s)' }).click();
  await page.locator('#note', { hasText: '3 job(s) deleted.' }).waitFor({ timeout: UI_TIMEOUT });
  await page
    .locator('#search-count', { hasText: /^0 jobs match\.$/ })
    .waitFor({ timeout: UI_TIMEOUT });
  await expect(deleteAll.isHidden()).resolves.toBe(true);
  const [{ n }] = await dashboard.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs."jobHistory" WHERE task = 'obsolete'`,
  );
  expect(n).toBe(0);
  // The jobs of another task that failed are kept.
  for (const id of full) expect(await stateOf(id)).toBe('failed');
}, 60_000);
