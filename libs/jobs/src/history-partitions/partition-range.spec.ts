import { newJobId } from '../common/job-id.js';
import {
  idBound,
  msOfId,
  partitionAge,
  partitionName,
  partitionsToMake,
  startOfName,
  timePartitionOf,
} from './partition-range.js';

const HOUR = 3_600_000;
const at = Date.UTC(2026, 11, 10, 7, 30);

describe('partition ranges of job ids (UUID version 7)', () => {
  it('bound every id made in a millisecond from below, and sort as the times do', () => {
    const ms = Date.now();
    const id = newJobId();
    expect(idBound(msOfId(id)) <= id).toBe(true);
    expect(id < idBound(msOfId(id) + 1)).toBe(true);
    expect(idBound(ms - 1) < idBound(ms)).toBe(true);
    expect(idBound(at)).toBe('01a25edb-e8c0-0000-0000-000000000000');
    expect(msOfId(idBound(at))).toBe(at);
  });

  it('name a partition by its start in UTC and read an attached one back', () => {
    expect(partitionName(at)).toBe('jobHistory_20261210T073000');
    expect(startOfName('jobHistory_20261210T073000')).toBe(at);
    const bound = `FOR VALUES FROM ('${idBound(at)}') TO ('${idBound(at + HOUR)}')`;
    expect(timePartitionOf('jobHistory_20261210T073000', bound)).toEqual({
      name: 'jobHistory_20261210T073000',
      from: at,
      to: at + HOUR,
    });
    expect(timePartitionOf('jobHistory_default', 'DEFAULT')).toBeUndefined();
    expect(timePartitionOf('someone_elses', bound)).toBeUndefined();
  });

  it('are made ahead from the next interval (never the present one), then after the latest one', () => {
    expect(partitionsToMake([], at, HOUR, 2 * HOUR).map((p) => p.from)).toEqual([
      at + 30 * 60_000,
      at + 90 * 60_000,
    ]);
    // The next interval starts within the lead: the one after it.
    expect(partitionsToMake([], at + 29.5 * 60_000, HOUR, 2 * HOUR).map((p) => p.from)).toEqual([
      at + 90 * 60_000,
    ]);
    const latest = { name: 'x', from: at, to: at + HOUR };
    expect(partitionsToMake([latest], at, HOUR, 2 * HOUR).map((p) => p.from)).toEqual([at + HOUR]);
    // After a gap (every instance down), from the next interval on, not over the gap.
    const old = { name: 'y', from: at - 48 * HOUR, to: at - 47 * HOUR };
    expect(partitionsToMake([old], at, HOUR, HOUR).map((p) => p.from)).toEqual([at + 30 * 60_000]);
  });

  it('are due once every id in them is older than the expiration, overdue an interval later', () => {
    const partition = { name: 'p', from: at, to: at + HOUR };
    expect(partitionAge(partition, at + HOUR + 10 * HOUR - 1, 10 * HOUR)).toBe('recent');
    expect(partitionAge(partition, at + HOUR + 10 * HOUR, 10 * HOUR)).toBe('due');
    expect(partitionAge(partition, at + 2 * HOUR + 10 * HOUR, 10 * HOUR)).toBe('overdue');
  });
});
