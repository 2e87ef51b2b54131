import { CronExpressionParser } from 'cron-parser';
import { expandSlots, latestSlotAtOrBefore } from './slot-expansion.js';

const at = (iso: string) => new Date(iso);
const iso = (dates: Date[]) => dates.map((date) => date.toISOString());
const expand = (cron: string, timezone: string, after: string, until: string, limit = 100) =>
  iso(expandSlots({ cron, timezone }, at(after), at(until), limit));

describe('expandSlots', () => {
  it('lists the slots after the start and up to the end inclusive, in UTC', () => {
    expect(expand('*/15 * * * *', 'UTC', '2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z')).toEqual([
      '2026-01-01T00:15:00.000Z',
      '2026-01-01T00:30:00.000Z',
      '2026-01-01T00:45:00.000Z',
      '2026-01-01T01:00:00.000Z',
    ]);
  });

  it('stops at the limit', () => {
    expect(expand('* * * * *', 'UTC', '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z', 3)).toEqual([
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:02:00.000Z',
      '2026-01-01T00:03:00.000Z',
    ]);
  });

  it('reads a fixed-offset zone, with no daylight saving', () => {
    expect(
      expand('30 9 * * *', 'UTC+05:30', '2026-03-28T00:00:00Z', '2026-03-30T00:00:00Z'),
    ).toEqual(['2026-03-28T04:00:00.000Z', '2026-03-29T04:00:00.000Z']);
  });

  it('gives a one-off schedule its one slot, only inside the interval', () => {
    const once = '2026-01-01T00:00:30.000Z';
    expect(expand(once, 'UTC', '2026-01-01T00:00:00Z', '2026-01-01T00:01:00Z')).toEqual([once]);
    expect(expand(once, 'UTC', '2026-01-01T00:00:30Z', '2026-01-01T00:01:00Z')).toEqual([]);
    expect(expand(once, 'UTC', '2026-01-01T00:00:00Z', '2026-01-01T00:00:29Z')).toEqual([]);
    expect(latestSlotAtOrBefore({ cron: once, timezone: 'UTC' }, at(once))?.toISOString()).toBe(
      once,
    );
    expect(latestSlotAtOrBefore({ cron: once, timezone: 'UTC' }, at('2026-01-01T00:00:29Z'))).toBe(
      null,
    );
  });

  it('supports seconds-precision expressions', () => {
    expect(expand('*/20 * * * * *', 'UTC', '2026-01-01T00:00:05Z', '2026-01-01T00:01:00Z')).toEqual(
      ['2026-01-01T00:00:20.000Z', '2026-01-01T00:00:40.000Z', '2026-01-01T00:01:00.000Z'],
    );
  });

  it("reads @nestjs/schedule's CronExpression strings (EVERY_30_MINUTES_BETWEEN_9AM_AND_5PM) in the zone", () => {
    expect(
      expand('*/30 9-17 * * *', 'Asia/Tokyo', '2026-06-01T07:59:00Z', '2026-06-01T09:00:00Z'),
    ).toEqual([
      '2026-06-01T08:00:00.000Z', // 17:00 JST
      '2026-06-01T08:30:00.000Z', // 17:30 JST
    ]);
  });

  it('keeps local wall-clock times across a DST change (weekdays 09:00 in New York)', () => {
    expect(
      expand('0 9 * * 1-5', 'America/New_York', '2026-03-05T00:00:00Z', '2026-03-11T00:00:00Z'),
    ).toEqual([
      '2026-03-05T14:00:00.000Z', // EST
      '2026-03-06T14:00:00.000Z',
      '2026-03-09T13:00:00.000Z', // EDT from Sunday 8 March
      '2026-03-10T13:00:00.000Z',
    ]);
  });

  it('runs 30 2 * * * in Europe/Berlin once, shifted to 03:30 CEST, when 02:30 does not exist (29 March 2026)', () => {
    expect(
      expand('30 2 * * *', 'Europe/Berlin', '2026-03-27T00:00:00Z', '2026-03-31T00:00:00Z'),
    ).toEqual([
      '2026-03-27T01:30:00.000Z', // 02:30 CET
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:30:00.000Z', // 03:30 CEST: 02:30 was skipped by the clocks
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
  });

  it('runs 30 2 * * * in Europe/Berlin once, at the first 02:30, when 02:30 happens twice (25 October 2026)', () => {
    expect(
      expand('30 2 * * *', 'Europe/Berlin', '2026-10-23T00:00:00Z', '2026-10-27T00:00:00Z'),
    ).toEqual([
      '2026-10-23T00:30:00.000Z', // 02:30 CEST
      '2026-10-24T00:30:00.000Z',
      '2026-10-25T00:30:00.000Z', // the first 02:30 (CEST); not again at 02:30 CET
      '2026-10-26T01:30:00.000Z', // 02:30 CET
    ]);
  });

  it('keeps the real-time rhythm of */30 * * * * through the repeated hour in Europe/Berlin', () => {
    expect(
      expand('*/30 * * * *', 'Europe/Berlin', '2026-10-24T23:45:00Z', '2026-10-25T02:00:00Z'),
    ).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET
      '2026-10-25T01:30:00.000Z', // 02:30 CET
      '2026-10-25T02:00:00.000Z', // 03:00 CET
    ]);
  });

  describe('gives the same slots whenever the planner runs, across both Berlin DST changes', () => {
    const cases = [
      ['30 2 * * *', '2026-10-25T01:00:00Z'],
      ['30 1-3 * * *', '2026-10-25T01:00:00Z'],
      ['30 2 * * *', '2026-03-29T01:00:00Z'],
      ['0 2 * * *', '2026-03-29T01:00:00Z'],
      ['*/20 * * * *', '2026-10-25T01:00:00Z'],
    ] as const;
    it.each(cases)('%s around %s', (cron, change) => {
      const t = Date.parse(change);
      const until = new Date(t + 5 * 3600_000);
      const continuous = expandSlots(
        { cron, timezone: 'Europe/Berlin' },
        new Date(t - 26 * 3600_000),
        until,
        1_000,
      ).map((d) => d.getTime());
      for (let start = t - 4 * 3600_000; start <= t + 4 * 3600_000; start += 10 * 60_000 + 7_000) {
        const got = expandSlots({ cron, timezone: 'Europe/Berlin' }, new Date(start), until, 1_000);
        expect(got.map((d) => d.getTime())).toEqual(continuous.filter((slot) => slot > start));
      }
    });

    it('(cron-parser alone does not: started inside the repeated hour it yields the second 02:30)', () => {
      const iterator = CronExpressionParser.parse('30 2 * * *', {
        currentDate: at('2026-10-25T01:00:00Z'),
        endDate: at('2026-10-25T12:00:00Z'),
        tz: 'Europe/Berlin',
      });
      expect(iterator.next().toISOString()).toBe('2026-10-25T01:30:00.000Z');
      expect(
        expand('30 2 * * *', 'Europe/Berlin', '2026-10-25T01:00:00Z', '2026-10-25T12:00:00Z'),
      ).toEqual([]);
    });
  });

  it('is empty for an empty interval', () => {
    expect(expand('* * * * * *', 'UTC', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')).toEqual(
      [],
    );
  });
});

describe('latestSlotAtOrBefore', () => {
  it('finds the most recent slot, including one exactly at the instant', () => {
    const source = { cron: '0 * * * *', timezone: 'UTC' };
    expect(latestSlotAtOrBefore(source, at('2026-01-01T05:59:59Z'))?.toISOString()).toBe(
      '2026-01-01T05:00:00.000Z',
    );
    expect(latestSlotAtOrBefore(source, at('2026-01-01T06:00:00Z'))?.toISOString()).toBe(
      '2026-01-01T06:00:00.000Z',
    );
  });
});
