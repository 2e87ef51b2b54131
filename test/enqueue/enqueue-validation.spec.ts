import {
  InvalidJobOptionsError,
  InvalidPayloadError,
  JobsError,
  UnknownTaskError,
} from 'nestjs-pg-jobs';
import type { AddJobOptions } from 'nestjs-pg-jobs';
import { startJobsApp } from '../support/jobs-app.js';
import type { JobsApp } from '../support/jobs-app.js';
import { recording } from '../support/recorder.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let app: JobsApp;
// Runs no jobs, so whatever a failed call might have inserted would stay visible.
beforeAll(async () => {
  app = await startJobsApp(db.url, { ...recording('a'), options: { runJobs: false } });
});
afterAll(() => app?.close());

const cycle: Record<string, unknown> = { name: 'loop' };
cycle.self = cycle;

const badJobs: [string, AddJobOptions, new (...args: never[]) => JobsError, RegExp][] = [
  [
    'an unknown task',
    { task: 'nope' },
    UnknownTaskError,
    /No @JobTask\(\) handler .* "nope" \(known: record\)/,
  ],
  [
    'a function in the payload',
    { task: 'record', payload: { cb: () => 1 } },
    InvalidPayloadError,
    /\$\.cb is a function/,
  ],
  [
    'a BigInt in the payload',
    { task: 'record', payload: { n: 10n } },
    InvalidPayloadError,
    /\$\.n is a BigInt/,
  ],
  [
    'a cycle in the payload',
    { task: 'record', payload: cycle },
    InvalidPayloadError,
    /\$\.self refers back/,
  ],
  [
    'NaN in the payload',
    { task: 'record', payload: [1, NaN] },
    InvalidPayloadError,
    /\$\[1\] is NaN/,
  ],
  [
    'a class instance in the payload',
    { task: 'record', payload: new Map() },
    InvalidPayloadError,
    /Map instance/,
  ],
  [
    'an invalid waitUntil',
    { task: 'record', waitUntil: new Date('soon') },
    InvalidJobOptionsError,
    /"waitUntil" must be a valid Date; got Invalid Date/,
  ],
  [
    'a string waitUntil',
    { task: 'record', waitUntil: '2030-01-01' as never },
    InvalidJobOptionsError,
    /"waitUntil" must be a valid Date; got "2030-01-01"/,
  ],
  [
    'a negative maxRetries',
    { task: 'record', maxRetries: -1 },
    InvalidJobOptionsError,
    /"maxRetries" must be an integer >= 0; got -1/,
  ],
  [
    'a fractional maxRetries',
    { task: 'record', maxRetries: 1.5 },
    InvalidJobOptionsError,
    /"maxRetries" .* got 1.5/,
  ],
  [
    'a fractional priority',
    { task: 'record', priority: 0.5 },
    InvalidJobOptionsError,
    /"priority" must be a 32-bit integer/,
  ],
  [
    'a NUL character in a payload string',
    { task: 'record', payload: { note: 'a\u0000b' } },
    InvalidPayloadError,
    /\$\.note contains a NUL character/,
  ],
  [
    'a NUL character in a payload key',
    { task: 'record', payload: { list: [{ 'k\u0000': 1 }] } },
    InvalidPayloadError,
    /\$\.list\[0\] has a key that contains a NUL character/,
  ],
  [
    'half an emoji (a lone surrogate) in the payload',
    { task: 'record', payload: { cut: '\u{1F600}'.slice(0, 1) } },
    InvalidPayloadError,
    /\$\.cut contains a lone surrogate/,
  ],
  [
    'a NUL character in uniqueKey',
    { task: 'record', uniqueKey: 'key\u0000' },
    InvalidJobOptionsError,
    /"uniqueKey" contains a NUL character/,
  ],
  [
    'a lone surrogate in groupKey',
    { task: 'record', groupKey: 'tenant-\ud83d' },
    InvalidJobOptionsError,
    /"groupKey" contains a lone surrogate/,
  ],
  [
    'a NUL character in the task name',
    { task: 'record\u0000' },
    InvalidJobOptionsError,
    /"task" contains a NUL character/,
  ],
  [
    'an option that does not exist',
    { task: 'record', useWorker: true } as never,
    InvalidJobOptionsError,
    /"useWorker" is not an option/,
  ],
];

async function queueSize(): Promise<number> {
  const [row] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs.jobs`);
  return row.n;
}

describe.each(badJobs)('addJob with %s', (_what, job, errorClass, message) => {
  it('throws its typed error and inserts nothing', async () => {
    const before = await queueSize();
    const attempt = app.queue.addJob(job);
    await expect(attempt).rejects.toThrow(errorClass);
    await expect(attempt).rejects.toThrow(message);
    expect(await queueSize()).toBe(before);
  });

  it('fails a whole batch in which it appears, inserting none of it', async () => {
    const before = await queueSize();
    await expect(app.queue.addJobs([{ task: 'record' }, job, { task: 'record' }])).rejects.toThrow(
      errorClass,
    );
    expect(await queueSize()).toBe(before);
  });
});

it('accepts an unknown task on an instance that allows them, for instances that only enqueue', async () => {
  const producer = await startJobsApp(db.url, {
    options: { allowUnknownTasks: true, runJobs: false },
  });
  try {
    const { id } = await producer.queue.addJob({ task: 'handledElsewhere' });
    expect(await producer.queue.getJob(id)).toMatchObject({
      task: 'handledElsewhere',
      state: 'pending',
    });
  } finally {
    await producer.close();
  }
});

it('rejects an id that is not a UUID in getJob and cancelJob', async () => {
  await expect(app.queue.getJob('42')).rejects.toThrow(InvalidJobOptionsError);
  await expect(app.queue.cancelJob("'; DROP TABLE jobs; --")).rejects.toThrow(/must be a job id/);
});
