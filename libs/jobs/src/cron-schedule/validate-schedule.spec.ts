import {
  InvalidCronExpressionError,
  InvalidPayloadError,
  InvalidScheduleError,
  InvalidTimeZoneError,
} from '../errors/jobs.errors.js';
import { validateSchedule } from './validate-schedule.js';

describe('validateSchedule', () => {
  it("applies the defaults: named after the task, UTC, empty payload, skip, the module's grace, overlapping allowed", () => {
    expect(validateSchedule({ task: 'report', cron: ' 0 6 * * * ' }, 'dynamic', 60)).toEqual({
      name: 'report',
      task: 'report',
      cron: '0 6 * * *',
      timezone: 'UTC',
      payload: '{}',
      missedSlots: 'skip',
      missedSlotGrace: 60,
      overlap: 'allow',
      source: 'dynamic',
    });
  });

  it('accepts a fixed-offset zone, and refuses one beyond 14 hours or with 60 minutes', () => {
    const base = { task: 't', cron: '0 9 * * *' };
    expect(validateSchedule({ ...base, timezone: 'UTC+05:30' }, 'static', 60).timezone).toBe(
      'UTC+05:30',
    );
    expect(validateSchedule({ ...base, timezone: 'UTC-03:00' }, 'static', 60).timezone).toBe(
      'UTC-03:00',
    );
    for (const timezone of ['UTC+14:30', 'UTC+05:60', 'UTC+5:30', 'GMT+05:00']) {
      expect(() => validateSchedule({ ...base, timezone }, 'static', 60)).toThrow(
        InvalidTimeZoneError,
      );
    }
  });

  it('stores a Date as the ISO instant of a one-off slot, and refuses an invalid one', () => {
    const at = new Date('2031-05-04T03:02:01.123Z');
    expect(validateSchedule({ task: 't', cron: at }, 'static', 60).cron).toBe(
      '2031-05-04T03:02:01.123Z',
    );
    // As an expression the same text is refused: only a Date makes a one-off schedule.
    expect(() =>
      validateSchedule({ task: 't', cron: '2031-05-04T03:02:01.123Z' }, 'static', 60),
    ).toThrow(InvalidCronExpressionError);
    for (const bad of [new Date(Number.NaN), new Date('+012000-01-01T00:00:00Z')]) {
      expect(() => validateSchedule({ task: 't', cron: bad }, 'static', 60)).toThrow(
        InvalidCronExpressionError,
      );
    }
  });

  it('takes overlap "allow" or "skip" only', () => {
    const base = { task: 't', cron: '* * * * *' };
    expect(validateSchedule({ ...base, overlap: 'skip' }, 'static', 60).overlap).toBe('skip');
    expect(() => validateSchedule({ ...base, overlap: 'wait' as never }, 'static', 60)).toThrow(
      '"overlap"',
    );
  });

  it('accepts 6-field expressions, aliases and IANA zones', () => {
    expect(validateSchedule({ task: 't', cron: '*/5 * * * * *' }, 'static', 60).cron).toBe(
      '*/5 * * * * *',
    );
    expect(
      validateSchedule({ task: 't', cron: '@daily', timezone: 'Europe/Berlin' }, 'static', 60)
        .timezone,
    ).toBe('Europe/Berlin');
  });

  it.each([
    [''],
    ['* * * *'],
    ['* * * * * * *'],
    ['61 * * * *'],
    ['0 0 31 2 *'],
    ['every day'],
    [42],
  ])('refuses the cron expression %p, quoting it', (cron) => {
    const call = () => validateSchedule({ task: 't', cron: cron as string }, 'dynamic', 60);
    expect(call).toThrow(InvalidCronExpressionError);
    expect(call).toThrow(JSON.stringify(cron));
  });

  it.each([['H * * * *'], ['0 H(0-5) * * *'], ['H/15 * * * * *'], ['0 9 * * MON-THU,H']])(
    'refuses the hashed (H) expression %p, which would pick other times on each round (issue 32, defect 4)',
    (cron) => {
      const call = () => validateSchedule({ task: 't', cron }, 'dynamic', 60);
      expect(call).toThrow(InvalidCronExpressionError);
      expect(call).toThrow('"H" (hashed) fields');
    },
  );

  it('still reads THU and MAR as names, not as hashes', () => {
    expect(validateSchedule({ task: 't', cron: '0 9 * MAR THU' }, 'static', 60).cron).toBe(
      '0 9 * MAR THU',
    );
  });

  it.each([['Mars/Olympus'], ['+02:00'], [''], [7]])(
    'refuses the time zone %p, quoting it',
    (timezone) => {
      const call = () =>
        validateSchedule(
          { task: 't', cron: '* * * * *', timezone: timezone as string },
          'dynamic',
          60,
        );
      expect(call).toThrow(InvalidTimeZoneError);
      expect(call).toThrow(JSON.stringify(timezone));
    },
  );

  it('refuses unknown keys, bad names, bad policies and payloads JSON cannot carry', () => {
    const base = { task: 't', cron: '* * * * *' };
    expect(() => validateSchedule({ ...base, every: 5 } as never, 'dynamic', 60)).toThrow(
      InvalidScheduleError,
    );
    expect(() => validateSchedule({ ...base, name: 'has space' }, 'dynamic', 60)).toThrow(
      InvalidScheduleError,
    );
    expect(() => validateSchedule({ ...base, missedSlots: 'all' as never }, 'dynamic', 60)).toThrow(
      '"missedSlots"',
    );
    expect(() => validateSchedule({ ...base, payload: { n: NaN } }, 'dynamic', 60)).toThrow(
      InvalidPayloadError,
    );
  });

  it("takes the module's missedSlotGrace unless the schedule has its own, and refuses a grace that is not a positive number of seconds", () => {
    const base = { task: 't', cron: '* * * * *' };
    expect(validateSchedule(base, 'static', 90).missedSlotGrace).toBe(90);
    expect(validateSchedule({ ...base, missedSlotGrace: 1.5 }, 'static', 90).missedSlotGrace).toBe(
      1.5,
    );
    for (const grace of [0, -1, Number.POSITIVE_INFINITY, '60']) {
      expect(() =>
        validateSchedule({ ...base, missedSlotGrace: grace as number }, 'dynamic', 60),
      ).toThrow(`"missedSlotGrace"`);
    }
  });
});
