import { randomUUID } from 'node:crypto';
import { JobContentionError, JobsError } from 'nestjs-pg-jobs';
import { useCluster } from '../support/cluster.js';
import type { JobsApp } from '../support/jobs-app.js';

/*
 * Contention that never ends, made deterministic with triggers that swallow one job's writes: to
 * the call, the job (or the unique key) looks as if another session moved it every time it acts.
 * What is proved is the call's answer once it gives up: a typed error, not a plain `Error`.
 */
const cluster = useCluster();
const { db } = cluster;
let app: JobsApp;

beforeAll(async () => {
  app = await cluster.startEnqueuer('contention');
  await db.query(`
    CREATE FUNCTION jobs.swallow_contended() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF (TG_OP = 'INSERT' AND NEW."uniqueKey" = 'contended')
         OR (TG_OP <> 'INSERT' AND OLD.payload ? 'contended') THEN
        RETURN NULL;
      END IF;
      RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    END $$;
    CREATE TRIGGER swallow_contended BEFORE INSERT OR UPDATE OR DELETE ON jobs.jobs
      FOR EACH ROW EXECUTE FUNCTION jobs.swallow_contended();`);
});

/** A queued job whose every delete and update is swallowed. */
async function contendedJob(): Promise<string> {
  const { id } = await app.queue.addJob({
    task: 'anything',
    payload: { contended: true },
    waitUntil: new Date(Date.now() + 3_600_000),
  });
  return id;
}

it('addJob throws JobContentionError when its unique key neither goes in nor matches a pending job', async () => {
  const adding = app.queue.addJob({ task: 'anything', uniqueKey: 'contended' });
  await expect(adding).rejects.toThrow(JobContentionError);
  await expect(adding).rejects.toThrow(
    /enqueueing 1 job\(s\) after 4 tries: their unique keys kept changing hands/,
  );
  await expect(adding).rejects.toBeInstanceOf(JobsError);
});

it('cancelJob throws JobContentionError when the job keeps moving between the queue and history', async () => {
  const id = await contendedJob();
  const cancelling = app.queue.cancelJob(id);
  await expect(cancelling).rejects.toThrow(JobContentionError);
  await expect(cancelling).rejects.toThrow(
    `Gave up cancelling job ${id} after 10 tries: the job kept moving between the queue and its history`,
  );
});

it('waitForJob throws JobContentionError when the job keeps moving between the queue and history', async () => {
  const id = await contendedJob();
  await expect(app.queue.waitForJob(id)).rejects.toThrow(JobContentionError);
});

it('an uncontended job is untouched by the triggers: cancelJob still cancels it', async () => {
  const { id } = await app.queue.addJob({ task: 'anything', payload: { id: randomUUID() } });
  expect(await app.queue.cancelJob(id)).toBe(true);
});
