import { flowStateOf, progressOf } from './flow-progress.js';

describe('flowStateOf', () => {
  it.each([
    [{ completed: 3, blocked: 1 }, 'running'],
    [{ failed: 1, pending: 2 }, 'running'],
    [{ failed: 1, active: 1, cancelled: 2 }, 'running'],
    [{ completed: 2, suspended: 1 }, 'running'],
    [{ completed: 4 }, 'completed'],
    [{}, 'completed'],
    [{ completed: 1, failed: 1, cancelled: 2 }, 'failed'],
    [{ completed: 1, interrupted: 1 }, 'failed'],
    [{ skipped: 1, completed: 2 }, 'failed'],
    [{ completed: 1, cancelled: 3 }, 'cancelled'],
  ] as const)('%j is %s', (counts, state) => {
    expect(flowStateOf(counts)).toBe(state);
  });
});

describe('progressOf', () => {
  it("counts a flow's jobs by state, leaving out those without one", () => {
    expect(
      progressOf([
        { state: 'completed' },
        { state: 'completed' },
        { state: 'blocked' },
        { state: null },
      ]),
    ).toEqual({ jobCount: 4, counts: { completed: 2, blocked: 1 }, state: 'running' });
  });
});
