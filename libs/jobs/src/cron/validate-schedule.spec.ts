import {
  InvalidCronExpressionError,
  InvalidPayloadError,
  InvalidScheduleError,
  InvalidTimeZoneError,
} from '../errors/jobs.errors.js';
import { validateSchedule } from './validate-schedule.js';

describe('validateSchedule', () => {
  it('applies the defaults: named after the task, UTC, empty payload, skip', () => {
    expect(validateSchedule({ task: 'report', cron: ' 0 6 * * * ' }, 'dynamic')).toEqual({
      name: 'report',
      task: 'report',
      cron: '0 6 * * *',
      timezone: 'UTC',
      payload: '{}',
      missedSlots: 'skip',
      source: 'dynamic',
    });
  });

  it('accepts 6-field expressions, aliases and IANA zones', () => {
    expect(validateSchedule({ task: 't', cron: '*/5 * * * * *' }, 'static').cron).toBe(
      '*/5 * * * * *',
    );
    expect(
      validateSchedule({ task: 't', cron: '@daily', timezone: 'Europe/Berlin' }, 'static').timezone,
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
    const call = () => validateSchedule({ task: 't', cron: cron as string }, 'dynamic');
    expect(call).toThrow(InvalidCronExpressionError);
    expect(call).toThrow(JSON.stringify(cron));
  });

  it.each([['Mars/Olympus'], ['+02:00'], [''], [7]])(
    'refuses the time zone %p, quoting it',
    (timezone) => {
      const call = () =>
        validateSchedule({ task: 't', cron: '* * * * *', timezone: timezone as string }, 'dynamic');
      expect(call).toThrow(InvalidTimeZoneError);
      expect(call).toThrow(JSON.stringify(timezone));
    },
  );

  it('refuses unknown keys, bad names, bad policies and payloads JSON cannot carry', () => {
    const base = { task: 't', cron: '* * * * *' };
    expect(() => validateSchedule({ ...base, every: 5 } as never, 'dynamic')).toThrow(
      InvalidScheduleError,
    );
    expect(() => validateSchedule({ ...base, name: 'has space' }, 'dynamic')).toThrow(
      InvalidScheduleError,
    );
    expect(() => validateSchedule({ ...base, missedSlots: 'all' as never }, 'dynamic')).toThrow(
      '"missedSlots"',
    );
    expect(() => validateSchedule({ ...base, payload: { n: NaN } }, 'dynamic')).toThrow(
      InvalidPayloadError,
    );
  });
});
