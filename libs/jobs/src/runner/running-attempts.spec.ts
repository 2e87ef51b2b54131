import { RunningAttempt, RunningAttempts } from './running-attempts.js';

/** Claim tokens are unique per claim; here, a snooze's next claim reuses attempt 1 under claim 12. */
const attemptOf = (id: string, attempt: number, claim: string) =>
  new RunningAttempt({
    id,
    task: 't',
    queue: 'default',
    payload: {},
    attempt,
    inFlow: false,
    resumed: false,
    maxRetries: 3,
    priority: 0,
    traceContext: null,
    claim,
  });

describe('RunningAttempts', () => {
  it('finds an attempt by job id and claim, and no other', () => {
    const running = new RunningAttempts();
    const first = attemptOf('a', 1, '10');
    running.add(first);
    running.add(attemptOf('b', 1, '11'));
    expect(running.find('a', '10')).toBe(first);
    expect(running.find('a', '12')).toBeUndefined();
    expect(running.find('c', '10')).toBeUndefined();
  });

  it("holds a job's older attempt beside its next one, each found and removed on its own", async () => {
    const running = new RunningAttempts();
    const reaped = attemptOf('a', 1, '10');
    const next = attemptOf('a', 1, '12');
    running.add(reaped);
    running.add(next);
    expect(running.size).toBe(2);
    expect([...running.values()]).toEqual([reaped, next]);
    expect(running.find('a', '10')).toBe(reaped);
    expect(running.find('a', '12')).toBe(next);

    running.delete(next);
    expect(running.find('a', '10')).toBe(reaped);
    expect(running.size).toBe(1);
    const empty = running.whenEmpty(10_000);
    running.delete(reaped);
    await empty;
    expect(running.size).toBe(0);
    expect([...running.values()]).toEqual([]);
  });
});
