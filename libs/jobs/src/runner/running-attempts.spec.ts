import { RunningAttempt, RunningAttempts } from './running-attempts.js';

const attemptOf = (id: string, attempt: number) =>
  new RunningAttempt({
    id,
    task: 't',
    queue: 'default',
    payload: {},
    attempt,
    maxRetries: 3,
    priority: 0,
    traceContext: null,
  });

describe('RunningAttempts', () => {
  it('finds an attempt by job id and attempt number, and no other', () => {
    const running = new RunningAttempts();
    const first = attemptOf('a', 1);
    running.add(first);
    running.add(attemptOf('b', 1));
    expect(running.find('a', 1)).toBe(first);
    expect(running.find('a', 2)).toBeUndefined();
    expect(running.find('c', 1)).toBeUndefined();
  });

  it("holds a job's older attempt beside its next one, each found and removed on its own", async () => {
    const running = new RunningAttempts();
    const reaped = attemptOf('a', 1);
    const next = attemptOf('a', 2);
    running.add(reaped);
    running.add(next);
    expect(running.size).toBe(2);
    expect([...running.values()]).toEqual([reaped, next]);
    expect(running.find('a', 1)).toBe(reaped);
    expect(running.find('a', 2)).toBe(next);

    running.delete(next);
    expect(running.find('a', 1)).toBe(reaped);
    expect(running.size).toBe(1);
    const empty = running.whenEmpty(10_000);
    running.delete(reaped);
    await empty;
    expect(running.size).toBe(0);
    expect([...running.values()]).toEqual([]);
  });
});
