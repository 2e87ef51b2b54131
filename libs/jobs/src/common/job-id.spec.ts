import { jest } from '@jest/globals';
import { JOB_ID_PATTERN } from './names.js';
import { newJobId } from './job-id.js';

describe('newJobId', () => {
  it('makes UUIDs of version 7 and the RFC variant, which the job id rule accepts', () => {
    for (let i = 0; i < 1000; i++) {
      const id = newJobId();
      expect(id).toMatch(JOB_ID_PATTERN);
      expect(id[14]).toBe('7');
      expect('89ab').toContain(id[19]);
    }
  });

  it('starts each id with the milliseconds it was made at', () => {
    const before = Date.now();
    const id = newJobId();
    const after = Date.now();
    const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after);
  });

  it('sorts ids made in later milliseconds after earlier ones', async () => {
    const first = newJobId();
    const start = Date.now();
    while (Date.now() === start) await new Promise((resolve) => setImmediate(resolve));
    expect(newJobId() > first).toBe(true);
  });

  it('sorts the ids it makes within one millisecond in the order it made them', () => {
    const ids = Array.from({ length: 5_000 }, newJobId);
    const outOfOrder = ids.filter((id, i) => i > 0 && id <= ids[i - 1]);
    expect(outOfOrder).toEqual([]);
  });

  it("keeps the clock's time in each id when the clock goes back (history's partitions are by it)", () => {
    const msOf = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now');
    try {
      clock.mockReturnValue(now + 60_000);
      expect(msOf(newJobId())).toBe(now + 60_000);
      clock.mockReturnValue(now);
      expect(msOf(newJobId())).toBe(now);
    } finally {
      clock.mockRestore();
    }
  });

  it('never repeats itself across refills of its randomness', () => {
    const ids = new Set(Array.from({ length: 10_000 }, newJobId));
    expect(ids.size).toBe(10_000);
  });
});
