import { expandSlots, latestSlotAtOrBefore } from './slot-expansion.js';

/** One regression test per defect of issue 32, each with the instants worked out by hand. */
const at = (iso: string) => new Date(iso);
const iso = (dates: Date[]) => dates.map((date) => date.toISOString());
const expand = (cron: string, timezone: string, after: string, until: string, limit = 100) =>
  iso(expandSlots({ cron, timezone }, at(after), at(until), limit));
const latest = (cron: string, timezone: string, instant: string) =>
  latestSlotAtOrBefore({ cron, timezone }, at(instant))?.toISOString();

describe('latestSlotAtOrBefore reads the wall clock as expandSlots does (issue 32, defect 1)', () => {
  it('answers the first 01:30 of a New York fall-back, not the second, which is no slot', () => {
    expect(
      expand('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', '2026-11-01T12:00:00Z'),
    ).toEqual(['2026-11-01T05:30:00.000Z']); // 01:30 EDT
    expect(latest('30 1 * * *', 'America/New_York', '2026-11-01T06:31:00Z')).toBe(
      '2026-11-01T05:30:00.000Z',
    );
  });

  it('answers the shifted 03:30 EDT of a New York spring-forward, not the day before', () => {
    expect(latest('30 2 * * *', 'America/New_York', '2026-03-08T07:31:00Z')).toBe(
      '2026-03-08T07:30:00.000Z', // 02:30 did not exist: 03:30 EDT
    );
  });
});

describe('30-minute daylight saving, Australia/Lord_Howe (issue 32, defect 2)', () => {
  it('keeps every hourly slot across the fall-back (02:00 LHDT back to 01:30 LHST)', () => {
    expect(
      expand('0 * * * *', 'Australia/Lord_Howe', '2026-04-04T13:00:00Z', '2026-04-04T20:00:00Z'),
    ).toEqual([
      '2026-04-04T14:00:00.000Z', // 01:00 LHDT
      '2026-04-04T15:30:00.000Z', // 02:00 LHST
      '2026-04-04T16:30:00.000Z',
      '2026-04-04T17:30:00.000Z',
      '2026-04-04T18:30:00.000Z',
      '2026-04-04T19:30:00.000Z',
    ]);
  });

  it('gives 1,000 daily slots across many changes, none lost', () => {
    const slots = expandSlots(
      { cron: '0 12 * * *', timezone: 'Australia/Lord_Howe' },
      at('2026-01-01T00:00:00Z'),
      at('2036-01-01T00:00:00Z'),
      1_000,
    );
    expect(slots).toHaveLength(1_000);
  });

  it('keeps 02:30 LHDT and shifts the gap by 30 minutes at the spring-forward (02:00 LHST to 02:30 LHDT)', () => {
    const change = ['2026-10-03T14:00:00Z', '2026-10-03T17:00:00Z'] as const;
    expect(expand('30 * * * *', 'Australia/Lord_Howe', ...change)).toEqual([
      '2026-10-03T15:00:00.000Z', // 01:30 LHST
      '2026-10-03T15:30:00.000Z', // 02:30 LHDT
      '2026-10-03T16:30:00.000Z', // 03:30 LHDT
    ]);
    expect(expand('15 2 * * *', 'Australia/Lord_Howe', ...change)).toEqual([
      '2026-10-03T15:45:00.000Z', // 02:15 did not exist: 02:45 LHDT
    ]);
    expect(expand('0,30 1,2 * * *', 'Australia/Lord_Howe', ...change)).toEqual([
      '2026-10-03T14:30:00.000Z', // 01:00 LHST
      '2026-10-03T15:00:00.000Z', // 01:30 LHST
      '2026-10-03T15:30:00.000Z', // 02:00 shifted and 02:30 LHDT: one run
    ]);
  });
});

describe('a midnight fall-back, America/Havana (issue 32, defect 3)', () => {
  it('runs 0 0 * * * at the first midnight (CDT), not the second (CST)', () => {
    expect(
      expand('0 0 * * *', 'America/Havana', '2026-10-31T12:00:00Z', '2026-11-01T12:00:00Z'),
    ).toEqual(['2026-11-01T04:00:00.000Z']);
  });
});

describe('H fields (issue 32, defect 4)', () => {
  it('are refused, never re-randomised on each expansion', () => {
    expect(() =>
      expand('H * * * *', 'UTC', '2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z'),
    ).toThrow(/H/);
  });
});

describe('hour steps name fixed wall-clock hours (issue 32, defect 5)', () => {
  it('runs 0 */2 * * * once at the repeated 02:00 in Berlin, as docs/cron.md says', () => {
    expect(
      expand('0 */2 * * *', 'Europe/Berlin', '2026-10-24T21:00:00Z', '2026-10-25T04:00:00Z'),
    ).toEqual([
      '2026-10-24T22:00:00.000Z', // 00:00 CEST
      '2026-10-25T00:00:00.000Z', // 02:00 CEST; not again at 02:00 CET
      '2026-10-25T03:00:00.000Z', // 04:00 CET
    ]);
  });

  it('and in a 2-hour fall-back (Antarctica/Troll, 03:00 +02 back to 01:00 +00)', () => {
    expect(
      expand('0 */2 * * *', 'Antarctica/Troll', '2026-10-24T21:00:00Z', '2026-10-25T05:00:00Z'),
    ).toEqual([
      '2026-10-24T22:00:00.000Z', // 00:00 +02
      '2026-10-25T00:00:00.000Z', // 02:00 +02; not again at 02:00 +00
      '2026-10-25T04:00:00.000Z', // 04:00 +00
    ]);
  });
});
