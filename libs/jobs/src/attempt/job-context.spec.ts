import { InvalidContextArgumentError, JobSnooze } from '../errors/jobs.errors.js';
import { createJobContext } from './job-context.js';
import type { AttemptJob } from './attempt-job.js';
import type { ContextSources } from './job-context.js';

const JOB: AttemptJob = {
  id: '0190a5b2-7d1c-7e4f-8a2b-1c2d3e4f5a6b',
  task: 'sendEmail',
  payload: {},
  attempt: 2,
  maxRetries: 3,
  claim: '1',
};

/** Sources that record what the context asked of them. */
function recordingSources(manager?: ContextSources['manager']) {
  const heard = { signals: 0, progress: [] as string[] };
  const signal = new AbortController().signal;
  const sources: ContextSources = {
    signal: () => {
      heard.signals++;
      return signal;
    },
    progress: (json) => heard.progress.push(json),
    dependencies: () => Promise.resolve({}),
    steps: () => {
      throw new Error('no step in these tests');
    },
    manager,
  };
  return { sources, heard, signal };
}

describe('createJobContext', () => {
  it("carries the attempt's fields and the manager it was given", () => {
    const manager = {} as ContextSources['manager'];
    const ctx = createJobContext(JOB, recordingSources(manager).sources);
    expect([ctx.id, ctx.task, ctx.attempt, ctx.maxRetries]).toEqual([
      JOB.id,
      JOB.task,
      JOB.attempt,
      JOB.maxRetries,
    ]);
    expect(ctx.manager).toBe(manager);
  });

  it('asks for the signal only when the task reads ctx.signal', () => {
    const { sources, heard, signal } = recordingSources();
    const ctx = createJobContext(JOB, sources);
    expect(heard.signals).toBe(0);
    expect(ctx.signal).toBe(signal);
    expect(heard.signals).toBe(1);
  });

  it('hands each valid progress value on as JSON and refuses others', () => {
    const { sources, heard } = recordingSources();
    const ctx = createJobContext(JOB, sources);
    ctx.reportProgress(40);
    ctx.reportProgress({ done: 2, of: 5 });
    expect(() => ctx.reportProgress(101)).toThrow(InvalidContextArgumentError);
    expect(heard.progress).toEqual(['40', '{"done":2,"of":5}']);
  });

  it('reports progress also when reportProgress is taken out of the context', () => {
    const { sources, heard } = recordingSources();
    const { reportProgress, signal } = createJobContext(JOB, sources);
    reportProgress(10);
    reportProgress(20);
    expect(heard.progress).toEqual(['10', '20']);
    expect(signal).toBeInstanceOf(AbortSignal);
  });

  it('snoozes, also when snooze is called apart from the context', () => {
    const { snooze } = createJobContext(JOB, recordingSources().sources);
    expect(snooze(30)).toEqual(new JobSnooze(30));
    expect(() => snooze(-1)).toThrow(InvalidContextArgumentError);
  });

  // A getter of its own makes V8 allocate an accessor pair per context in the old generation,
  // which keeps the attempt's young objects alive through every scavenge (see createJobContext);
  // a function of its own is a closure per attempt. Either shows here as an own property.
  it('holds no accessor and no function of its own, so that an attempt allocates neither', () => {
    const ctx = createJobContext(JOB, recordingSources().sources);
    const own = Object.entries(Object.getOwnPropertyDescriptors(ctx));
    expect(own.filter(([, d]) => d.get || d.set).map(([name]) => name)).toEqual([]);
    expect(own.filter(([, d]) => typeof d.value === 'function').map(([name]) => name)).toEqual([]);
  });
});
