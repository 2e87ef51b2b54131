import { Injectable } from '@nestjs/common';
import type { Browser } from 'playwright-core';
import { JobsAdminModule, JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobInfo, JobTaskHandler } from 'nestjs-pg-jobs';
import { launchChromium } from './support/chromium.js';
import { startHttpJobsApp } from './support/http-app.js';
import type { HttpJobsApp } from './support/http-app.js';
import { waitFor } from './support/jobs-app.js';
import { useTestDatabase } from './support/test-database.js';

const db = useTestDatabase();

/** Reports its payload's progress, then runs until the test lets it end. */
let release: () => void = () => undefined;
@JobTask('halfway')
@Injectable()
class HalfwayTask implements JobTaskHandler<{ progress: number }> {
  run(payload: { progress: number }, ctx: JobContext): Promise<void> {
    ctx.reportProgress(payload.progress);
    return new Promise((resolve) => (release = resolve));
  }
}

let server: HttpJobsApp;
let browser: Browser;
beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ path: 'jobs-admin', guard: { canActivate: () => true } })],
    tasks: [HalfwayTask],
    options: { pollingCheck: 0.1 },
  });
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  release();
  await browser?.close();
  await server?.close();
});

it("shows a running job's progress as a bar", async () => {
  const { id } = await server.queue.addJob({ task: 'halfway', payload: { progress: 40 } });
  await waitFor('the progress to be written', async () => {
    const res = await fetch(`${server.url}/jobs-admin/api/jobs?state=active`);
    const { jobs } = (await res.json()) as { jobs: JobInfo[] };
    return jobs.find((job) => job.id === id)?.progress === 40;
  });

  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  await page.goto(`${server.url}/jobs-admin`);
  const bar = page.locator(`#active tr[data-job-id="${id}"] progress`);
  await bar.waitFor({ timeout: 20_000 });
  expect(await bar.getAttribute('value')).toBe('40');
  expect(await page.locator(`#active tr[data-job-id="${id}"]`).innerText()).toContain('40 %');
  expect(problems).toEqual([]);
  await page.close();
}, 60_000);
