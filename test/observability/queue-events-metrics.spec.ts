import { Injectable } from '@nestjs/common';
import { JobEventsService, JobTask, JobsMetricsModule, JobsMetricsService } from 'nestjs-pg-jobs';
import type { JobEvent, JobTaskHandler } from 'nestjs-pg-jobs';
import { useCluster } from '../support/cluster.js';
import { startHttpJobsApp } from '../support/http-app.js';
import type { HttpJobsApp } from '../support/http-app.js';
import { waitFor } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { parsePrometheusText } from '../support/prometheus-text.js';

const cluster = useCluster({ options: { pollingCheck: 0.1, maxRetries: 1, retryBackoff: 0 } });

@JobTask({ name: 'sendMail', queue: 'emails' })
@Injectable()
class SendMail implements JobTaskHandler<{ fail?: boolean }> {
  run(payload: { fail?: boolean }, ctx: { attempt: number }): void {
    if (payload.fail && ctx.attempt === 1) throw new Error('mailbox full');
  }
}

let worker: HttpJobsApp;
let enqueuer: JobsApp;
beforeAll(async () => {
  worker = await startHttpJobsApp(cluster.db.url, {
    imports: [JobsMetricsModule.forRoot({ path: false })],
    tasks: [SendMail],
    options: { instanceId: 'worker', pollingCheck: 0.1, maxRetries: 1, retryBackoff: 0 },
  });
  enqueuer = await cluster.startEnqueuer('enqueuer');
});
afterAll(() => worker?.close());

it("carries the job's queue in job events and getJob, and keeps its group across a retry", async () => {
  const events: JobEvent[] = [];
  const subscription = worker.app.get(JobEventsService).events$.subscribe((e) => events.push(e));
  try {
    const { id, promise } = await worker.queue.addJob({
      task: 'sendMail',
      payload: { fail: true },
      groupKey: 'tenant-7',
      promise: true,
    });
    await promise;
    await waitFor('the completed event', () => events.some((e) => e.type === 'completed'));
    expect(events.map((e) => [e.type, e.queue])).toEqual([
      ['added', 'emails'],
      ['started', 'emails'],
      ['failed', 'emails'],
      ['started', 'emails'],
      ['completed', 'emails'],
    ]);
    expect(await worker.queue.getJob(id)).toMatchObject({
      state: 'completed',
      attempt: 2,
      queue: 'emails',
      groupKey: 'tenant-7',
    });
    // The retry was claimed with its group (history records what the last claim saw).
    const [row] = await cluster.db.query(
      `SELECT queue, "groupKey" FROM jobs."jobHistory" WHERE id = $1`,
      [id],
    );
    expect(row).toEqual({ queue: 'emails', groupKey: 'tenant-7' });
  } finally {
    subscription.unsubscribe();
  }
});

it("files a job enqueued by an instance without the task's handler under the task's queue where it is known", async () => {
  await worker.queue.pauseQueue('emails');
  const { id } = await enqueuer.queue.addJob({ task: 'sendMail' });
  // The enqueuer does not know the task: it says default; the worker knows it is an email.
  expect(await enqueuer.queue.getJob(id)).toMatchObject({ state: 'pending', queue: 'default' });
  expect(await worker.queue.getJob(id)).toMatchObject({ state: 'pending', queue: 'emails' });
  expect((await worker.queue.getQueues()).find((q) => q.name === 'emails')).toMatchObject({
    paused: true,
    pending: 1,
  });
  await worker.queue.resumeQueue('emails');
  await waitFor(
    'the job to complete',
    async () => (await worker.queue.getJob(id))?.state === 'completed',
  );
  expect(await enqueuer.queue.getJob(id)).toMatchObject({ queue: 'emails' });
});

it('labels every metric with the queue', async () => {
  const samples = parsePrometheusText(await worker.app.get(JobsMetricsService).metrics());
  const labels = 'queue="emails",task="sendMail"';
  expect(samples.get(`nestjs_pg_jobs_added_total{${labels}}`)).toBe(1);
  expect(samples.get(`nestjs_pg_jobs_completed_total{${labels}}`)).toBe(2);
  expect(samples.get(`nestjs_pg_jobs_failed_total{final="false",${labels}}`)).toBe(1);
  expect(samples.get(`nestjs_pg_jobs_duration_seconds_count{outcome="completed",${labels}}`)).toBe(
    2,
  );
  expect(samples.get(`nestjs_pg_jobs_queue_depth{${labels}}`)).toBe(0);
  expect(samples.get(`nestjs_pg_jobs_active{${labels}}`)).toBe(0);
});
