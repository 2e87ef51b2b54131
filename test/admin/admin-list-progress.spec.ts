import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { JobsAdminModule, JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobInfo, JobTaskHandler, ListedJobInfo } from 'nestjs-pg-jobs';
import { PREVIEW_CHARS } from '../../libs/jobs/src/admin/admin.sql.js';
import { startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

/*
 * A running job's progress is any JSON its task reports, up to 16 kB (`ctx.reportProgress`): the
 * dashboard's lists, polled every 2 seconds, carry a preview of it as of the payload's, never the
 * value (a page of 200 running jobs would otherwise be over 3 MB).
 */
let release: () => void = () => undefined;
const running = new Promise<void>((resolve) => (release = resolve));
let server: HttpJobsApp;
// Before the database's hooks, which drop it: the app's shutdown waits for the running jobs.
afterAll(async () => {
  release();
  await server?.close();
});
const db = useTestDatabase();
/** The largest progress a task may report, of characters that do not compress. */
const LARGE_LOG = randomBytes(8000).toString('hex');
/** A list response of the two running jobs; the large progress alone would be 16 kB. */
const MAX_LIST_BYTES = 4096;

/** Reports `{ log }` as its progress, then runs until the test ends. */
@JobTask('reporting')
@Injectable()
class ReportingTask implements JobTaskHandler<{ log: string }> {
  run({ log }: { log: string }, ctx: JobContext): Promise<void> {
    ctx.reportProgress({ log });
    return running;
  }
}

const api = (path: string) => fetch(`${server.url}/jobs-admin/api/${path}`);

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ path: 'jobs-admin', guard: { canActivate: () => true } })],
    tasks: [ReportingTask],
    options: { pollingCheck: 0.1 },
  });
});

/** The job's own view, once its progress is written. */
async function viewOnceReported(id: string): Promise<JobInfo> {
  return waitFor(`job ${id}'s progress`, async () => {
    const { job } = (await (await api(`jobs/${id}`)).json()) as { job: JobInfo };
    return job.progress !== null && job;
  });
}

it("lists a running job's large progress as a preview; the job's own view has it whole", async () => {
  const large = await server.queue.addJob({
    task: 'reporting',
    payload: { log: LARGE_LOG },
  });
  const small = await server.queue.addJob({
    task: 'reporting',
    payload: { log: 'ab'.repeat(500) },
  });
  const view = await viewOnceReported(large.id);
  await viewOnceReported(small.id);
  expect(view.progress).toEqual({ log: LARGE_LOG });

  for (const query of ['state=active', '']) {
    const res = await api(`jobs?${query}`);
    const text = await res.text();
    expect(Buffer.byteLength(text)).toBeLessThan(MAX_LIST_BYTES);
    const jobs = new Map(
      (JSON.parse(text) as { jobs: ListedJobInfo[] }).jobs.map((job) => [job.id, job]),
    );
    expect(jobs.get(large.id)).not.toHaveProperty('progress');
    // Stored in more than 8 kB: not read at all.
    expect(jobs.get(large.id)!.progressPreview).toBe('…');
    const preview = jobs.get(small.id)!.progressPreview!;
    expect(preview.startsWith('{"log": "abab')).toBe(true);
    expect(preview.endsWith('…')).toBe(true);
    expect([...preview].length).toBeLessThanOrEqual(PREVIEW_CHARS);
  }
}, 30_000);
