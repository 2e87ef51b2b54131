import { fixedOffsetZone, isKnownTimeZone } from './time-zones.js';

describe('fixedOffsetZone', () => {
  it("names @nestjs/schedule's utcOffset minutes as a fixed-offset zone", () => {
    expect(fixedOffsetZone(0)).toBe('UTC');
    expect(fixedOffsetZone(330)).toBe('UTC+05:30');
    expect(fixedOffsetZone(-90)).toBe('UTC-01:30');
    expect(fixedOffsetZone(-720)).toBe('UTC-12:00');
    for (const zone of ['UTC+05:30', 'UTC-01:30', 'UTC-12:00']) {
      expect(isKnownTimeZone(zone)).toBe(true);
    }
  });

  it('refuses fractions of a minute and offsets beyond 14 hours', () => {
    expect(fixedOffsetZone(1.5)).toBe(null);
    expect(fixedOffsetZone(15 * 60)).toBe(null);
    expect(fixedOffsetZone(Number.NaN)).toBe(null);
  });
});
