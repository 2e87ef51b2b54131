import { JobSnooze, UnrecoverableJobError } from 'nestjs-pg-jobs';
import type { JobBackoff } from 'nestjs-pg-jobs';
import { endingOfThrow } from '../../libs/jobs/src/attempt/attempt-ending.js';
import { MAX_RETRY_DELAY_LIMIT } from '../../libs/jobs/src/options/defaults.js';

/** Attempt 2 of a job with 3 retries: retries remain. */
const JOB = { id: 'job-1', task: 'send', payload: null, attempt: 2, maxRetries: 3, claim: '1' };

/** A backoff answering `answer`, with the calls it had. */
function backoffAnswering(answer: number | 'giveUp') {
  const calls: [number, Error][] = [];
  const backoff: JobBackoff = (attempt, error) => {
    calls.push([attempt, error]);
    return answer;
  };
  return { backoff, calls };
}

/** The retry decided for `thrown`, and the warnings it gave. */
function decide(thrown: unknown, backoff?: JobBackoff, job = JOB) {
  const warnings: string[] = [];
  const ending = endingOfThrow(thrown, job, backoff, (message) => warnings.push(message));
  if (ending.outcome !== 'failed') throw new Error(`not failed: ${ending.outcome}`);
  return { retry: ending.retry, warnings };
}

it('retries on the default backoff when the task has none', () => {
  expect(decide(new Error('boom'))).toEqual({ retry: { giveUp: false }, warnings: [] });
});

it('gives up on an UnrecoverableJobError, whatever the backoff says', () => {
  const { backoff, calls } = backoffAnswering(5);
  expect(decide(new UnrecoverableJobError('no'), backoff).retry).toEqual({ giveUp: true });
  expect(calls).toEqual([]);
});

it("asks the backoff with the attempt and the error, and takes its seconds or 'giveUp'", () => {
  const error = new Error('busy');
  const { backoff, calls } = backoffAnswering(30);
  expect(decide(error, backoff)).toEqual({ retry: { giveUp: false, delay: 30 }, warnings: [] });
  expect(calls).toEqual([[2, error]]);
  expect(decide(error, () => 0).retry).toEqual({ giveUp: false, delay: 0 });
  expect(decide(error, () => MAX_RETRY_DELAY_LIMIT).retry).toEqual({
    giveUp: false,
    delay: MAX_RETRY_DELAY_LIMIT,
  });
  expect(decide(error, () => 'giveUp').retry).toEqual({ giveUp: true });
});

it('does not ask the backoff once no retry remains', () => {
  const { backoff, calls } = backoffAnswering(5);
  const last = { ...JOB, attempt: 4 };
  expect(decide(new Error('boom'), backoff, last).retry).toEqual({ giveUp: false });
  expect(calls).toEqual([]);
});

it.each([
  ['a negative number', -1, 'returned -1'],
  ['NaN', NaN, 'returned NaN'],
  ['Infinity', Infinity, 'returned Infinity'],
  ['a delay above the limit', MAX_RETRY_DELAY_LIMIT + 1, `returned ${MAX_RETRY_DELAY_LIMIT + 1}`],
  ['a string', '10', 'returned "10"'],
  ['nothing', undefined, 'returned undefined'],
  ['an object', { seconds: 1 }, 'returned {"seconds":1}'],
])('falls back to the default backoff, with a warning, on %s', (_what, answer, said) => {
  const { retry, warnings } = decide(new Error('boom'), () => answer as number);
  expect(retry).toEqual({ giveUp: false });
  expect(warnings).toEqual([
    expect.stringContaining(`The backoff of task "send" for attempt 2 of job job-1 ${said}`),
  ]);
});

it('falls back to the default backoff, with a warning, when the backoff throws', () => {
  const { retry, warnings } = decide(new Error('boom'), () => {
    throw new Error('bad maths');
  });
  expect(retry).toEqual({ giveUp: false });
  expect(warnings).toEqual([expect.stringContaining('threw (bad maths)')]);
});

it('snoozes rather than fails on what ctx.snooze returns', () => {
  expect(endingOfThrow(new JobSnooze(60), JOB, undefined, () => undefined)).toEqual({
    outcome: 'snoozed',
    seconds: 60,
  });
});
