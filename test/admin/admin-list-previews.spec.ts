import { JobsAdminModule } from 'nestjs-pg-jobs';
import type { ListedJobInfo } from 'nestjs-pg-jobs';
import { PREVIEW_CHARS } from '../../libs/jobs/src/admin/admin.sql.js';
import { startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { useTestDatabase } from '../support/test-database.js';

/*
 * The dashboard lists up to 200 jobs per list and refreshes every 2 seconds: what it lists must not
 * grow with what the jobs carry. Here every listed job carries the worst of it: payloads of a
 * megabyte (or of characters that take the most bytes as JSON), and long errors of emoji, control
 * characters or quotes.
 */
const db = useTestDatabase();
const PAGE = 200;
const MAX_LIST_BYTES = 256 * 1024;
const TASK = 'renderReport';
const GROUP = 'customer-42';

let server: HttpJobsApp;
const api = (path: string) => fetch(`${server.url}/jobs-admin/api/${path}`);

/** $1 i: the payload of job i, as jsonb. */
const PAYLOAD = `CASE i % 5
  WHEN 0 THEN jsonb_build_object('text', repeat('😀', 250000))
  WHEN 1 THEN jsonb_build_object('text', repeat('😀', 400))
  WHEN 2 THEN jsonb_build_object('control', repeat(chr(1), 1500))
  WHEN 3 THEN to_jsonb(array_fill('"'::text, ARRAY[300000]))
  ELSE jsonb_build_object('hex', CASE WHEN i % 40 = 4
         THEN (SELECT string_agg(md5(i::text || ':' || n), '') FROM generate_series(1, 32768) n)
         ELSE repeat('ab', 500000) END)
END`;
/** The error of job i's last attempt. */
const ERROR = `CASE i % 3
  WHEN 0 THEN repeat('💥', 100000)
  WHEN 1 THEN repeat(chr(1), 200000)
  ELSE repeat('"\\', 100000)
END`;

beforeAll(async () => {
  server = await startHttpJobsApp(db.url, {
    imports: [JobsAdminModule.forRoot({ path: 'jobs-admin', guard: { canActivate: () => true } })],
    options: { runJobs: false, allowUnknownTasks: true },
  });
  // A page of failed jobs, and a page of pending ones waiting for a retry after a failed attempt.
  await db.query(`
    INSERT INTO jobs."jobHistory" (id, task, state, payload, attempt, "maxRetries", "createdAt",
                                   "startedAt", "completedAt", "lastErrorMessage", "groupKey", "executedBy")
    SELECT gen_random_uuid(), '${TASK}', 'failed',
           ${PAYLOAD}, 1, CASE WHEN i <= ${PAGE} THEN 0 ELSE 5 END, now(), now(), now(), ${ERROR},
           '${GROUP}', 'instance-' || i
    FROM generate_series(1, ${2 * PAGE}) AS i`);
  await db.query(`
    INSERT INTO jobs.jobs (id, task, payload, retries, "maxRetries", "groupKey")
    SELECT id, task, payload, 1, 5, "groupKey" FROM jobs."jobHistory" WHERE "maxRetries" = 5`);
}, 120_000);
afterAll(() => server?.close());

/** A list response: its size in bytes, and its jobs. */
async function list(query: string): Promise<{ bytes: number; jobs: ListedJobInfo[] }> {
  const res = await api(`jobs?${query}&limit=${PAGE}`);
  expect(res.status).toBe(200);
  const text = await res.text();
  return { bytes: Buffer.byteLength(text), jobs: JSON.parse(text).jobs };
}

it.each([['state=failed'], ['state=pending'], ['task=' + TASK], ['']])(
  'a list of 200 jobs (%s) stays under 256 kB, with previews of payloads and errors instead of the values',
  async (query) => {
    const { bytes, jobs } = await list(query);
    expect(jobs).toHaveLength(PAGE);
    expect(bytes).toBeLessThan(MAX_LIST_BYTES);
    for (const job of jobs) {
      expect(job).not.toHaveProperty('payload');
      expect(job).not.toHaveProperty('lastErrorMessage');
      expect([...job.payloadPreview].length).toBeLessThanOrEqual(PREVIEW_CHARS);
      expect([...job.lastErrorPreview!].length).toBeLessThanOrEqual(PREVIEW_CHARS);
      expect(job.lastErrorPreview!.endsWith('…')).toBe(true);
    }
  },
);

it('previews say how the values begin', async () => {
  const { jobs } = await list('state=failed');
  const previews = new Set(jobs.map((job) => job.payloadPreview));
  // Stored in more than 2 kB: not read at all.
  expect(previews).toContain('…');
  expect([...previews].some((p) => p.startsWith('{"text": "😀😀') && p.endsWith('😀…'))).toBe(true);
  expect([...previews].some((p) => p.startsWith('{"control": "\\u0001\\u0001'))).toBe(true);
  const errors = new Set(jobs.map((job) => job.lastErrorPreview!.slice(0, 4)));
  expect(errors).toEqual(new Set(['💥💥', '\u0001'.repeat(4), '"\\"\\']));
});

it("the job's own view still has its whole payload and error", async () => {
  const [{ id }] = await db.query<{ id: string }>(
    `SELECT id FROM jobs."jobHistory" WHERE payload ? 'text' AND length(payload->>'text') = 250000
       AND "lastErrorMessage" LIKE '💥%' LIMIT 1`,
  );
  const res = await api(`jobs/${id}`);
  const { job } = (await res.json()) as {
    job: { payload: { text: string }; lastErrorMessage: string };
  };
  expect(job.payload.text).toBe('😀'.repeat(250000));
  expect(job.lastErrorMessage).toBe('💥'.repeat(100000));
});
