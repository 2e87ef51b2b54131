import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler, ListedJobInfo } from 'nestjs-pg-jobs';
import { UI_TIMEOUT, useDashboard } from '../support/dashboard.js';
import { waitFor } from '../support/jobs-app.js';

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

// Before the dashboard's hooks: the instance's shutdown waits for the running job.
afterAll(() => release());
const dashboard = useDashboard({ tasks: [HalfwayTask], options: { pollingCheck: 0.1 } });

it("shows a running job's progress as a bar", async () => {
  const { id } = await dashboard.server.queue.addJob({
    task: 'halfway',
    payload: { progress: 40 },
  });
  await waitFor('the progress to be written', async () => {
    const res = await fetch(`${dashboard.server.url}/jobs-admin/api/jobs?state=active`);
    const { jobs } = (await res.json()) as { jobs: ListedJobInfo[] };
    return jobs.find((job) => job.id === id)?.progressPreview === '40';
  });

  const { page, problems } = await dashboard.openPage();
  const bar = page.locator(`#active tr[data-job-id="${id}"] progress`);
  await bar.waitFor({ timeout: UI_TIMEOUT });
  expect(await bar.getAttribute('value')).toBe('40');
  expect(await page.locator(`#active tr[data-job-id="${id}"]`).innerText()).toContain('40 %');
  expect(problems).toEqual([]);
  await page.close();
}, 60_000);
