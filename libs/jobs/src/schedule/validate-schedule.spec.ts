import {
  InvalidCronExpressionError,
  InvalidPayloadError,
  InvalidScheduleError,
  InvalidTimeZoneError,
} from '../errors/jobs.errors.js';
import { validateSchedule } from './validate-schedule.js';

describe('validateSchedule', () => {
  it("applies the defaults: named after the task, UTC, empty payload, skip, the module's grace", () => {
    expect(validateSchedule({ task: 'report', cron: ' 0 6 * * * ' }, 'dynamic', 60)).toEqual({
      name: 'report',
      task: 'report',
      cron: '0 6 * * *',
      timezone: 'UTC',
      payload: '{}',
      missedSlots: 'skip',
      missedSlotGrace: 60,
      source: 'dynamic',
    });
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
